// Command occ is the OpenClaw Enterprise engineers' tool: a disposable local control plane
// (`occ dev`) and the OpenShell SandboxDriver core driven by hand (`occ sandbox`).
package main

import (
	"context"
	"os"

	"github.com/openclaw/occ/internal/cli"
	"github.com/openclaw/occ/internal/interrupt"
)

func main() {
	// Ctrl-C and SIGTERM cancel the context every command runs under, so long waits stop and
	// rollbacks (which use their own bounded context) still get to run; a second signal stops
	// the rollback too. After a signal the exit code is 128 plus its number.
	ctx, in, stop := interrupt.Watch(context.Background())
	code := cli.Execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(in.ExitCode(code))
}
