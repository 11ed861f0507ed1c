package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// tools stands in for k3d's tools image. k3d starts it with `noop` (it must keep running, for
// k3d execs into it) and, in tools-node import mode, runs `./k3d-tools save-image -d TAR IMAGE…`
// to write `docker save` output into the shared image volume.
func tools(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: k3d-tools noop | save-image -d DEST IMAGE…")
	}
	switch args[0] {
	case "noop":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		<-ctx.Done()
		return nil
	case "save-image":
		return saveImage(args[1:])
	}
	return fmt.Errorf("k3d-tools %s: not supported by the stand-in (supported: noop, save-image)", args[0])
}

func saveImage(args []string) error {
	var dest string
	var images []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-d" || a == "--destination":
			if i+1 >= len(args) {
				return fmt.Errorf("save-image: %s needs a path", a)
			}
			i++
			dest = args[i]
		case strings.HasPrefix(a, "-"):
			return fmt.Errorf("save-image: flag %s is not supported by the stand-in", a)
		default:
			images = append(images, a)
		}
	}
	if dest == "" || len(images) == 0 {
		return fmt.Errorf("usage: save-image -d DEST IMAGE…")
	}
	sock, err := dockerSocket()
	if err != nil {
		return err
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}, Timeout: 30 * time.Minute}
	q := url.Values{}
	for _, img := range images {
		q.Add("names", img)
	}
	resp, err := c.Get("http://docker/images/get?" + q.Encode())
	if err != nil {
		return fmt.Errorf("save-image: docker engine at %s: %w", sock, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("save-image: docker engine: %s: %s", resp.Status, b)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dest)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("save-image: write %s: %w", dest, err)
	}
	return f.Close()
}

// dockerSocket finds the engine socket k3d bind-mounted into the tools container: DOCKER_HOST
// when set, else the default path, else the one unix socket bind-mounted into the container
// (k3d mounts $DOCKER_SOCK at its own path, which need not be the default).
func dockerSocket() (string, error) {
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		return strings.TrimPrefix(h, "unix://"), nil
	}
	if isSocket("/var/run/docker.sock") {
		return "/var/run/docker.sock", nil
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && isSocket(fields[4]) {
			return fields[4], nil
		}
	}
	return "", fmt.Errorf("no Docker engine socket in the tools container (k3d mounts the one named by DOCKER_SOCK)")
}

func isSocket(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}
