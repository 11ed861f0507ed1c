package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Runner runs the recorded project through the docker compose plugin. Every call passes the
// snapshot, the project name and the checkout explicitly, so nothing from the user's
// environment (COMPOSE_FILE, COMPOSE_PROJECT_NAME, a Docker context) can redirect it.
type Runner struct {
	// Plugin is the located plugin (FindPlugin).
	Plugin Plugin
	// Endpoint is the recorded engine endpoint, exported to the plugin as DOCKER_HOST.
	Endpoint string
	// Snapshot is the recorded model.
	Snapshot Snapshot
	// Redact are literal values scrubbed from any output shown to the user (passwords the
	// caller knows of). URL userinfo is always scrubbed.
	Redact []string
	// Env is the environment the plugin's is derived from; nil means os.Environ(). Only a few
	// neutral variables are kept (see pluginEnv).
	Env []string
}

// CommandError is a failed plugin run: the command and its (scrubbed) stderr, never only the
// exit status.
type CommandError struct {
	// Command is the plugin command line without the fixed global options ("up -d postgres").
	Command string
	Err     error
	// Stderr is the scrubbed tail of the plugin's standard error.
	Stderr string
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("docker compose %s: %v", e.Command, e.Err)
	if e.Stderr != "" {
		msg += "\n" + e.Stderr
	} else {
		msg += " (the plugin wrote nothing to stderr)"
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// UpOptions select what `compose up` starts.
type UpOptions struct {
	Services []string
	// Build builds images from the checkout first (--build).
	Build bool
	// NoDeps starts only the named services (--no-deps): the one-shot jobs they depend on have
	// already completed and must not run again.
	NoDeps bool
	// ForceRecreate replaces the services' containers even when Compose sees no change
	// (--force-recreate): `occ dev reload` runs a rebuilt image, or an Installation rewritten
	// under a read-only mount, that way.
	ForceRecreate bool
}

// Up runs `compose up --detach` for the services.
func (r Runner) Up(ctx context.Context, opts UpOptions) error {
	args := []string{"up", "--detach", "--no-color", "--quiet-pull"}
	if opts.Build {
		args = append(args, "--build")
	}
	if opts.NoDeps {
		args = append(args, "--no-deps")
	}
	if opts.ForceRecreate {
		args = append(args, "--force-recreate")
	}
	return r.Run(ctx, append(args, opts.Services...)...)
}

// Stop runs `compose stop` for the services.
func (r Runner) Stop(ctx context.Context, services ...string) error {
	return r.Run(ctx, append([]string{"stop"}, services...)...)
}

// DownOptions select what `compose down` removes besides containers and networks.
type DownOptions struct {
	// Volumes removes the named volumes (--volumes): the database and the bootstrap output.
	Volumes bool
	// Images removes the images Compose built for the project (--rmi local). Keeping them makes
	// the next `up` reuse their layers.
	Images bool
}

// Down runs `compose down --remove-orphans` with the chosen removals.
func (r Runner) Down(ctx context.Context, opts DownOptions) error {
	args := []string{"down", "--remove-orphans"}
	if opts.Volumes {
		args = append(args, "--volumes")
	}
	if opts.Images {
		args = append(args, "--rmi", "local")
	}
	return r.Run(ctx, args...)
}

// Run runs one plugin command against the snapshot. The plugin is executed directly (standalone
// mode), not through a docker CLI, which need not be installed.
func (r Runner) Run(ctx context.Context, args ...string) error {
	if r.Plugin.Path == "" || r.Endpoint == "" || r.Snapshot.Path == "" || r.Snapshot.Project == "" || r.Snapshot.Checkout == "" {
		return errors.New("docker compose: the runner needs the plugin, the recorded engine endpoint and the snapshot")
	}
	// The snapshot decides what every call (down included) acts on; one that someone else could
	// have written is not used.
	if err := checkPrivateFile(r.Snapshot.Path); err != nil {
		return fmt.Errorf("docker compose: snapshot: %w", err)
	}
	full := append([]string{
		"--project-directory", r.Snapshot.Checkout,
		"--project-name", r.Snapshot.Project,
		"--file", r.Snapshot.Path,
	}, args...)
	cmd := exec.CommandContext(ctx, r.Plugin.Path, full...)
	cmd.Dir = r.Snapshot.Checkout
	cmd.Env = pluginEnv(r.Env, r.Endpoint)
	// Compose handles SIGINT by stopping what it started; give it that chance before killing.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 20 * time.Second
	// The classic builder streams its steps to stdout; what went wrong is on stderr. Stdout is
	// shown only when stderr is empty.
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &limitBuffer{buf: &stdout, left: 1 << 20}
	cmd.Stderr = &limitBuffer{buf: &stderr, left: 1 << 20}
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	out := stderr.Bytes()
	if len(bytes.TrimSpace(out)) == 0 {
		out = stdout.Bytes()
	}
	return &CommandError{Command: Scrub(strings.Join(args, " "), r.Redact), Err: err, Stderr: strings.TrimPrefix(tail("", lastLines(out, shownLines), r.Redact), "\n")}
}

// shownLines is how much of the plugin's output an error shows: enough for Compose's error and
// the progress lines before it.
const shownLines = 15

// lastLines returns the last n lines of out.
func lastLines(out []byte, n int) []byte {
	out = bytes.TrimRight(out, "\n")
	for i, seen := len(out)-1, 0; i >= 0; i-- {
		if out[i] == '\n' {
			if seen++; seen == n {
				return out[i+1:]
			}
		}
	}
	return out
}

// keptEnv are the variables passed through to the plugin. Everything that could select another
// engine, context, project or file (DOCKER_CONTEXT, DOCKER_TLS_*, COMPOSE_*) is dropped.
var keptEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "TMPDIR": true,
	"LANG": true, "LC_ALL": true, "TZ": true,
	"DOCKER_CONFIG": true,
	"HTTP_PROXY":    true, "HTTPS_PROXY": true, "NO_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true,
	"XDG_RUNTIME_DIR": true,
}

// pluginEnv builds the plugin's environment: the neutral variables of base, DOCKER_HOST set to
// the recorded endpoint, and settings that keep its output plain and its behaviour fixed.
func pluginEnv(base []string, endpoint string) []string {
	if base == nil {
		base = os.Environ()
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if keptEnv[k] {
			env = append(env, kv)
		}
	}
	if endpoint != "" {
		env = append(env, "DOCKER_HOST="+endpoint)
	}
	return append(env,
		// The snapshot is self-contained; a .env in the checkout must not add anything.
		"COMPOSE_DISABLE_ENV_FILE=1",
		"COMPOSE_ANSI=never",
		"COMPOSE_PROGRESS=plain",
		"COMPOSE_MENU=false",
		"COMPOSE_STATUS_STDOUT=0",
		"DOCKER_CLI_HINTS=false",
	)
}

// maxShown bounds the output shown in an error.
const maxShown = 8 << 10

var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*):[^@/\s]+@`)

// Scrub removes URL passwords and the given literal secrets from s.
func Scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return userinfo.ReplaceAllString(s, "$1:[redacted]@")
}

// tail returns the scrubbed last maxShown bytes of out, indented, with an optional label, or ""
// when out is empty.
func tail(label string, out []byte, secrets []string) string {
	// Scrubbed before it is cut, so a secret straddling the cut cannot survive in part.
	s := strings.TrimRight(Scrub(string(out), secrets), "\n")
	if s == "" {
		return ""
	}
	if len(s) > maxShown {
		s = "…" + s[len(s)-maxShown:]
	}
	head := "\n"
	if label != "" {
		head = "\n" + label + ":\n"
	}
	return head + "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
