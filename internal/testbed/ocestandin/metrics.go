package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
)

// runPrometheus stands in for /bin/prometheus, in server and --agent mode: it requires its
// --config.file to be readable (the overlay mounts it from the checkout) and answers the
// readiness endpoint on --web.listen-address (default 0.0.0.0:9090), until SIGTERM.
func runPrometheus(args []string) int {
	listen, config, agent := "0.0.0.0:9090", "", false
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--web.listen-address="):
			listen = strings.TrimPrefix(a, "--web.listen-address=")
		case strings.HasPrefix(a, "--config.file="):
			config = strings.TrimPrefix(a, "--config.file=")
		case a == "--agent":
			agent = true
		}
	}
	if config == "" {
		fmt.Fprintln(os.Stderr, "prometheus: --config.file is required")
		return 2
	}
	if _, err := os.ReadFile(config); err != nil {
		fmt.Fprintf(os.Stderr, "prometheus: error loading config from %q: %v\n", config, err)
		return 1
	}
	ready := "Prometheus Server is Ready.\n"
	if agent {
		ready = "Prometheus Agent is Ready.\n"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, ready) })
	return serveUntilSignal("prometheus", listen, mux)
}

// runGrafana stands in for Grafana's /run.sh: it refuses to start without an administrator
// password (the overlay requires one) and answers /api/health on :3000, until SIGTERM. The
// password is never written anywhere.
func runGrafana() int {
	if os.Getenv("GF_SECURITY_ADMIN_PASSWORD") == "" {
		fmt.Fprintln(os.Stderr, "grafana: GF_SECURITY_ADMIN_PASSWORD is empty")
		return 1
	}
	if _, err := os.Stat("/etc/grafana/provisioning"); err != nil {
		fmt.Fprintf(os.Stderr, "grafana: provisioning: %v\n", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"database":"ok"}`)
	})
	return serveUntilSignal("grafana", "0.0.0.0:3000", mux)
}

func serveUntilSignal(name, listen string, h http.Handler) int {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: listen on %s: %v\n", name, listen, err)
		return 1
	}
	srv := &http.Server{Handler: h}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	fmt.Printf("%s stand-in listening on %s\n", name, listen)
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// runCollector stands in for the OpenTelemetry Collector of the development logging overlay
// (/otelcol-contrib): it requires every --config file to be readable and an OTLP logs endpoint
// to export to (the overlay requires one), accepts Fluent Forward connections on :24224 (the
// engine's fluentd logging driver sends the services' logs there) and counts their bytes, and
// reports that count on :8888/metrics, until SIGTERM. It exports nothing.
func runCollector(args []string) int {
	var configs []string
	for _, a := range args {
		if c, ok := strings.CutPrefix(a, "--config="); ok {
			configs = append(configs, c)
		}
	}
	if len(configs) == 0 {
		fmt.Fprintln(os.Stderr, "otelcol-contrib: at least one --config is required")
		return 2
	}
	for _, c := range configs {
		if _, err := os.ReadFile(c); err != nil {
			fmt.Fprintf(os.Stderr, "otelcol-contrib: read config %q: %v\n", c, err)
			return 1
		}
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") == "" {
		fmt.Fprintln(os.Stderr, "otelcol-contrib: OTEL_EXPORTER_OTLP_LOGS_ENDPOINT is empty")
		return 1
	}
	forward, err := net.Listen("tcp", "0.0.0.0:24224")
	if err != nil {
		fmt.Fprintf(os.Stderr, "otelcol-contrib: listen on :24224: %v\n", err)
		return 1
	}
	var received atomic.Int64
	go func() {
		for {
			c, err := forward.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				n, _ := io.Copy(io.Discard, c)
				received.Add(n)
			}()
		}
	}()
	defer forward.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "otelcol_receiver_fluentforward_bytes %d\n", received.Load())
	})
	return serveUntilSignal("otelcol-contrib", "0.0.0.0:8888", mux)
}
