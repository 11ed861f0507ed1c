package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// lbConfigPath is where k3d writes the load balancer's configuration.
const lbConfigPath = "/etc/confd/values.yaml"

// lbConfig is the file k3d writes: for each "PORT.PROTO", the node names to forward to.
type lbConfig struct {
	Ports    map[string][]string `json:"ports"`
	Settings struct {
		WorkerConnections int `json:"workerConnections"`
	} `json:"settings"`
}

// proxy stands in for k3d's nginx load balancer: a TCP forwarder that follows the configuration
// file k3d writes, reloading when it changes and printing nginx's "start worker processes" line
// after each (re)configuration, which is what k3d waits for. UDP ports are not forwarded.
func proxy(_ []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var (
		current   []byte
		listeners = map[string]net.Listener{}
		mu        sync.Mutex
		backends  = map[string][]string{}
	)
	reload := func(b []byte) error {
		var cfg lbConfig
		if err := yaml.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("parse %s: %w", lbConfigPath, err)
		}
		mu.Lock()
		defer mu.Unlock()
		backends = map[string][]string{}
		for key, servers := range cfg.Ports {
			port, proto, _ := strings.Cut(key, ".")
			if proto != "tcp" {
				logf("warning", "proxy: %s: only tcp is forwarded by the stand-in", key)
				continue
			}
			backends[port] = servers
			if _, ok := listeners[port]; ok {
				continue
			}
			l, err := net.Listen("tcp", ":"+port)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", port, err)
			}
			listeners[port] = l
			go serveForward(ctx, l, port, func() []string {
				mu.Lock()
				defer mu.Unlock()
				return backends[port]
			})
		}
		for port, l := range listeners {
			if _, ok := backends[port]; !ok {
				l.Close()
				delete(listeners, port)
			}
		}
		ports := make([]string, 0, len(backends))
		for p := range backends {
			ports = append(ports, p)
		}
		sort.Strings(ports)
		fmt.Fprintf(os.Stderr, "%s [notice] 1#1: start worker processes (stand-in TCP forwarder for ports %s)\n", time.Now().Format("2006/01/02 15:04:05"), strings.Join(ports, ","))
		return nil
	}
	// k3d writes the file before it starts the container and again on every node change; confd
	// in the real image polls it every second, and so does this.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(lbConfigPath); err == nil && !bytes.Equal(b, current) {
			if err := reload(b); err != nil {
				logf("error", "proxy: %v", err)
			} else {
				current = b
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func serveForward(ctx context.Context, l net.Listener, port string, servers func() []string) {
	next := 0
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		list := servers()
		go func(start int) {
			defer conn.Close()
			var up net.Conn
			for i := range list {
				target := net.JoinHostPort(list[(start+i)%len(list)], port)
				d := net.Dialer{Timeout: 2 * time.Second}
				if c, err := d.DialContext(ctx, "tcp", target); err == nil {
					up = c
					break
				}
			}
			if up == nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			go func() { io.Copy(up, conn); done <- struct{}{} }()
			go func() { io.Copy(conn, up); done <- struct{}{} }()
			<-done
		}(next)
		next++
	}
}
