package dockerbed

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

// capSysAdmin is the capability number of CAP_SYS_ADMIN, which mount needs.
const capSysAdmin = 21

// k3d runs every node container and every exec privileged; on hosts whose bounding set lacks a
// capability that only works through the capfix runtime, so this is the bed's first promise.
func TestPrivilegedContainerAndExecStart(t *testing.T) {
	e := Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, img := ensureBusybox(ctx, t, e)
	host := boundingSet(t, mustRead(t, "/proc/self/status"))
	showCaps := []string{"grep", "CapEff", "/proc/self/status"}
	mountAndShowCaps := []string{"sh", "-c", "mkdir -p /m && mount -t tmpfs t /m && umount /m && grep CapEff /proc/self/status"}

	// A privileged container exercises the config.json path of the wrapper (runc create); a
	// privileged exec the --process path (runc exec). An unprivileged container keeps Docker's
	// seccomp profile, so there the privileged exec can only be seen in its capabilities.
	plain := startContainer(t, e, img.Tag, false)
	for _, c := range []struct {
		what         string
		id           string
		privileged   bool
		cmd          []string
		wantSysAdmin bool
	}{
		{"privileged exec in a privileged container", startContainer(t, e, img.Tag, true), true, mountAndShowCaps, true},
		{"privileged exec in an unprivileged container", plain, true, showCaps, true},
		// Control: Docker's default set lacks CAP_SYS_ADMIN, so the other cases prove something.
		{"unprivileged exec in an unprivileged container", plain, false, showCaps, false},
	} {
		res, err := e.Exec(ctx, c.id, c.privileged, c.cmd...)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if res.ExitCode != 0 {
			t.Fatalf("%s failed with exit %d: %s%s", c.what, res.ExitCode, res.Stdout, res.Stderr)
		}
		eff := boundingSet(t, strings.Replace(res.Stdout, "CapEff:", "CapBnd:", 1))
		if got := eff&(1<<capSysAdmin) != 0; got != c.wantSysAdmin {
			t.Errorf("%s: CAP_SYS_ADMIN held %t, want %t (CapEff %x)", c.what, got, c.wantSysAdmin, eff)
		}
		if extra := eff &^ host; extra != 0 {
			t.Errorf("%s holds capabilities outside the host's bounding set: %x", c.what, extra)
		}
	}
}

// startContainer starts a container that sleeps, removed when the test ends.
func startContainer(t *testing.T, e *Engine, image string, privileged bool) string {
	t.Helper()
	ctx := context.Background()
	name := UniqueName(t, "occ-bed")
	created, err := e.API.ContainerCreate(ctx,
		&container.Config{Image: image, Cmd: []string{"sleep", "600"}, Labels: map[string]string{"occ.test": name}},
		&container.HostConfig{Privileged: privileged}, nil, nil, name)
	if err != nil {
		t.Fatalf("create container (privileged %t): %v", privileged, err)
	}
	t.Cleanup(func() {
		_ = e.API.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	})
	if err := e.API.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start container (privileged %t; is the engine's default runtime capfix? see scripts/testdocker): %v", privileged, err)
	}
	return created.ID
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func boundingSet(t *testing.T, status string) uint64 {
	t.Helper()
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no capability line in %q", status)
	return 0
}
