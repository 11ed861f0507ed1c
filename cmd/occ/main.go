// Command occ is the OpenClaw Enterprise engineers' tool: a disposable local control plane
// (`occ dev`) and the OpenShell SandboxDriver core driven by hand (`occ sandbox`).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/openclaw/occ/internal/cli"
)

func main() {
	// Ctrl-C and SIGTERM cancel the context every command runs under, so long waits stop and
	// rollbacks (which use their own bounded context) still get to run.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
