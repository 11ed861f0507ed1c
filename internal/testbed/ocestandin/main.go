// Command ocestandin stands in for the OpenClaw Enterprise (OCE) processes of the Compose
// control plane at their real interfaces, so occ's Compose profile can be tested against the
// real docker compose plugin and a real engine where OCE's images cannot exist (no registry, no
// Node.js). It is a multi-call binary, installed in the test images under the names the real
// compose files and healthchecks call:
//
//   - node <script>: dispatches on the script path of the real command —
//     scripts/migrate-production.mjs, scripts/bootstrap-installation.mjs,
//     apps/controller/src/server.mjs, apps/controller/src/worker.mjs,
//     scripts/production-healthcheck.mjs, and `node -e <fetch one-liner>` (the controller's
//     healthcheck);
//   - docker-entrypoint.sh postgres: the database stand-in;
//   - pg_isready: the database healthcheck;
//   - prometheus and run.sh: Prometheus and Grafana of the development metrics overlay;
//   - otelcol-contrib: the OpenTelemetry Collector of the development logging overlay.
//
// testdata/oce-checkout/README.md says what each stands in for and what it does not do. Only
// tests use it; product code never imports it.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	os.Exit(run(filepath.Base(os.Args[0]), os.Args[1:]))
}

func run(name string, args []string) int {
	switch name {
	case "node":
		return runNode(args)
	case "docker-entrypoint.sh", "postgres":
		if len(args) > 0 && args[0] == "postgres" {
			args = args[1:]
		}
		return runDatabase(args)
	case "pg_isready":
		return runPgIsReady(args)
	case "prometheus":
		return runPrometheus(args)
	case "run.sh":
		return runGrafana()
	case "otelcol-contrib":
		return runCollector(args)
	}
	fmt.Fprintf(os.Stderr, "ocestandin: unknown program name %q\n", name)
	return 127
}

// runNode dispatches on the script the real command runs.
func runNode(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "ocestandin node: no script given (the stand-in has no REPL)")
		return 9
	}
	switch args[0] {
	case "--input-type=module":
		if len(args) == 1 {
			return runModuleFromStdin()
		}
		args = args[1:]
	}
	switch args[0] {
	case "-e", "--eval":
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, "node: -e requires an argument")
			return 9
		}
		return runFetchHealthcheck(args[1])
	case "scripts/migrate-production.mjs":
		return runMigrate()
	case "scripts/bootstrap-installation.mjs":
		return runBootstrap()
	case "apps/controller/src/server.mjs":
		return runController()
	case "apps/controller/src/worker.mjs":
		return runWorker()
	case "scripts/production-healthcheck.mjs":
		return runHealthcheck(args[1:])
	case "scripts/build-console-metadata.mjs":
		return runConsoleMetadata(args[1:])
	}
	fmt.Fprintf(os.Stderr, "ocestandin node: no stand-in for script %q\n", args[0])
	return 1
}

// logEvent writes one JSON log line, the way OCE's structured logging does.
func logEvent(fields map[string]any) {
	writeJSONLine(os.Stdout, fields)
}
