package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/driver/openshell"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/sandbox"
)

// kubectl users type -n for a namespace: every `occ sandbox` command that takes an OCC
// Namespace accepts -n/--namespace.
func TestSandboxNamespaceShorthand(t *testing.T) {
	isolate(t)
	root := NewRootCommand(&Globals{})
	sb, _, err := root.Find([]string{"sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, c := range sb.Commands() {
		f := c.Flags().Lookup(flagNamespace)
		if f == nil {
			continue
		}
		found++
		if f.Shorthand != "n" {
			t.Errorf("occ sandbox %s --namespace has shorthand %q, want -n", c.Name(), f.Shorthand)
		}
	}
	if found < 2 {
		t.Fatalf("%d sandbox commands take --namespace, want at least ensure-namespace and cleanup", found)
	}
	// -n reaches the same flag: with --revision too, cleanup refuses the pair.
	code, _, errOut := run(t, "sandbox", "cleanup", "-n", "ns_acme", "--revision", "r.yaml", "--installation", "i.yaml")
	if code != exitUsage || !strings.Contains(errOut, "give exactly one of --revision FILE (revision shutdown) or --namespace NAME") {
		t.Fatalf("cleanup -n … --revision …: exit %d, stderr %q", code, errOut)
	}
}

// occ --version prints what `occ version` prints, as kubectl's and helm's users expect.
func TestVersionFlag(t *testing.T) {
	isolate(t)
	code, out, errOut := run(t, "--version")
	_, want, _ := run(t, "version")
	if code != 0 || out != want || !strings.HasPrefix(out, "occ ") {
		t.Fatalf("occ --version: exit %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
	}
}

// Reading `occ sandbox <command> --help` (and the root and global commands' help) shows how
// the command is typed: every one has an Examples section naming itself.
func TestHelpHasExamples(t *testing.T) {
	isolate(t)
	root := NewRootCommand(&Globals{})
	var check func(c *cobra.Command)
	check = func(c *cobra.Command) {
		path := c.CommandPath()
		if strings.HasPrefix(path, "occ dev") || c.Name() == "help" || strings.HasPrefix(c.Name(), "__") {
			return // the dev commands' examples belong to the dev work
		}
		if c.Example == "" || !strings.Contains(c.Example, path) {
			t.Errorf("%s has no example that runs it (Example %q)", path, c.Example)
		} else {
			code, out, _ := run(t, append(strings.Fields(path)[1:], "--help")...)
			if code != 0 || !strings.Contains(out, "Examples:\n") {
				t.Errorf("%s --help: exit %d, no Examples section:\n%s", path, code, out)
			}
		}
		for _, sub := range c.Commands() {
			check(sub)
		}
	}
	check(root)
}

// complete runs cobra's hidden completion request the way a shell's completion script does.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errOut := run(t, append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d, stderr %q", args, code, errOut)
	}
	var values []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.HasPrefix(line, ":") {
			values = append(values, strings.SplitN(line, "\t", 2)[0])
		}
	}
	return values
}

// Tab after -o offers the output formats, and after --context the kubeconfig's contexts (the
// one --kubeconfig names), on every command.
func TestFlagValueCompletion(t *testing.T) {
	isolate(t)
	if got := complete(t, "version", "-o", ""); strings.Join(got, ",") != "table,json,yaml" {
		t.Errorf("-o completes to %v, want table, json, yaml", got)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	body := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts:
- {name: k3d-occ-dev, context: {cluster: c, user: u}}
- {name: staging, context: {cluster: c, user: u}}
current-context: staging
`
	if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--kubeconfig", kc, "sandbox", "status", "--context", ""},
		{"sandbox", "provision", "--kubeconfig", kc, "--context", "k3"},
	} {
		got := complete(t, args...)
		want := "k3d-occ-dev,staging"
		if args[len(args)-1] == "k3" {
			want = "k3d-occ-dev"
		}
		if strings.Join(got, ",") != want {
			t.Errorf("__complete %v = %v, want %s", args, got, want)
		}
	}
	t.Setenv("KUBECONFIG", kc)
	if got := complete(t, "version", "--context", "st"); strings.Join(got, ",") != "staging" {
		t.Errorf("--context with $KUBECONFIG completes to %v, want staging", got)
	}
}

// noKubeconfig leaves occ no way to find a cluster: no flag, no $KUBECONFIG, no ~/.kube/config.
func noKubeconfig(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	os.Unsetenv("KUBECONFIG")
}

// An engineer on a machine with only a port-forward to the gateway (no kubeconfig) reads a
// revision's logs, kubectl style (--tail, --since DURATION, --since-time RFC 3339), and shuts
// the revision down: neither needs the cluster.
func TestLogsAndRevisionCleanupNeedOnlyTheGateway(t *testing.T) {
	isolate(t)
	noKubeconfig(t)
	gw := emulator.StartT(t, emulator.Options{})
	inst := filepath.Join(t.TempDir(), "installation.yaml")
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "installation", "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inst, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	revision := filepath.Join("..", "..", "testdata", "revisions", "codex.yaml")
	rf, err := compute.LoadRevisionFile(revision)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := compute.ResolveNamespace(rf.NamespaceID)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := openshell.WorkspaceName(ns.Name)
	name, _ := openshell.SandboxName("os", rf.RevisionID)

	// The Workspace and Sandbox exist on the gateway, as after an earlier provision.
	in, err := installation.Load(inst)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sandbox.GatewayConfig(in.OpenShellBackend(), gw.Addr())
	if err != nil {
		t.Fatal(err)
	}
	client, err := gateway.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	if _, err := client.CreateWorkspace(ctx, ws, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateSandboxOnce(ctx, gateway.CreateSandboxRequest{Workspace: ws, Name: name, Spec: &pb.SandboxSpec{}}, "9b2f4a1e-3c5d-4e6f-8a7b-0c1d2e3f4a5b"); err != nil {
		t.Fatal(err)
	}
	hourAgo := time.Now().Add(-time.Hour).UTC()
	if err := gw.AppendLogs(ws, name,
		&pb.SandboxLogLine{Level: "INFO", Target: "harness", Message: "old line", EventTime: timestamppb.New(hourAgo)},
		&pb.SandboxLogLine{Level: "INFO", Target: "harness", Message: "new line"},
	); err != nil {
		t.Fatal(err)
	}

	base := []string{"sandbox", "logs", "--installation", inst, "--gateway", gw.Addr(), "--revision", revision}
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{nil, []string{"old line", "new line"}, nil},
		{[]string{"--tail", "1"}, []string{"new line"}, []string{"old line"}},
		{[]string{"--lines", "1"}, []string{"new line"}, []string{"old line"}}, // the deprecated name still works
		{[]string{"--since", "5m"}, []string{"new line"}, []string{"old line"}},
		{[]string{"--since-time", hourAgo.Add(-time.Minute).Format(time.RFC3339)}, []string{"old line", "new line"}, nil},
		{[]string{"--since-time", hourAgo.Add(time.Minute).Format(time.RFC3339)}, []string{"new line"}, []string{"old line"}},
	} {
		code, out, errOut := run(t, append(base, tc.args...)...)
		if code != 0 {
			t.Errorf("logs %v: exit %d, stderr %q", tc.args, code, errOut)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("logs %v lacks %q:\n%s", tc.args, w, out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out, n) {
				t.Errorf("logs %v shows %q:\n%s", tc.args, n, out)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tail", "0"}, `--tail "0" is not a whole number from 1 to 2000: OpenShell log line count must be 1 to 2000.`},
		{[]string{"--since", "2026-01-02T03:04:05Z"}, `--since "2026-01-02T03:04:05Z" is not a duration (for example 5m or 2h); for a point in time use --since-time`},
		{[]string{"--since", "-5m"}, `--since "-5m" must be a positive duration`},
		{[]string{"--since-time", "2026-01-02 03:04:05"}, "OpenShell log since time must be an RFC 3339 UTC time."},
		{[]string{"--since", "5m", "--since-time", "2026-01-02T03:04:05Z"}, "give at most one of --since and --since-time"},
		{[]string{"--tail", "5", "--lines", "5"}, "give --tail only; --lines is its deprecated name"},
	} {
		if code, _, errOut := run(t, append(base, tc.args...)...); code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("logs %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}

	for i := range 2 {
		code, out, errOut := run(t, "sandbox", "cleanup", "--installation", inst, "--gateway", gw.Addr(), "--revision", revision)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("Revision %s of Agent %s is shut down", rf.RevisionID, rf.AgentID)) {
			t.Fatalf("cleanup --revision (run %d): exit %d, stdout %q, stderr %q", i+1, code, out, errOut)
		}
	}
	if _, err := client.GetSandbox(ctx, ws, name); !gateway.IsNotFound(err) {
		t.Fatalf("Sandbox after cleanup --revision: %v, want NOT_FOUND", err)
	}
	// Namespace deletion does need the cluster, and says so.
	if code, _, errOut := run(t, "sandbox", "cleanup", "--installation", inst, "--gateway", gw.Addr(), "-n", rf.NamespaceID); code == 0 || !strings.Contains(strings.ToLower(errOut), "kubeconfig") {
		t.Fatalf("cleanup -n without a kubeconfig: exit %d, stderr %q", code, errOut)
	}
}

// `occ dev up --help` reads in one screen, as kubectl's and kind's do: a few lines of what it
// does before Usage, the details in docs/dev-up.md, and the whole help well under a screenful
// of a terminal's 80 lines.
func TestDevUpHelpFitsOneScreen(t *testing.T) {
	isolate(t)
	code, out, _ := run(t, "dev", "up", "--help")
	prose, _, ok := strings.Cut(out, "\nUsage:")
	if code != 0 || !ok {
		t.Fatalf("occ dev up --help: exit %d\n%s", code, out)
	}
	if n := strings.Count(prose, "\n") + 1; n > 15 || !strings.Contains(prose, "docs/dev-up.md") {
		t.Errorf("%d lines before Usage (want at most 15, ending with where the details are):\n%s", n, prose)
	}
	if n := strings.Count(out, "\n"); n > 70 {
		t.Errorf("occ dev up --help is %d lines, want at most 70", n)
	}
	for _, line := range strings.Split(prose, "\n") {
		if len(line) > 100 {
			t.Errorf("a line of the description is %d characters: %q", len(line), line)
		}
	}
}

// A plain `occ dev up --dry-run` reads in one screen: the steps by name, the settings, each
// pinned image's digest once, and the problems (the closing error does not repeat them); -v adds
// what each step creates, and -o json stays complete.
func TestDevUpDryRunFitsOneScreen(t *testing.T) {
	dir := isolate(t)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no-docker.sock"))
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"dev", "up", "--dry-run", "--cluster-provider", "k3d", "--state-dir", filepath.Join(dir, "state")}
	_, out, errOut := run(t, args...)
	if n := strings.Count(out, "\n"); n > 65 {
		t.Errorf("the dry run is %d lines, want at most 65:\n%s", n, out)
	}
	for _, img := range set.GatewayImages() {
		if n := strings.Count(out, img.Image.Digest); n != 1 {
			t.Errorf("the digest of the %s image appears %d times, want once:\n%s", img.Role, n, out)
		}
	}
	if !strings.Contains(out, "Problems (occ dev up would stop at these") || strings.Contains(errOut, "looked at:") {
		t.Errorf("the problems are not listed once, above the closing error:\nstdout %s\nstderr %s", out, errOut)
	}
	_, verbose, _ := run(t, append(args, "-v")...)
	if !strings.Contains(verbose, "Helm release openshell-system/openshell-gateway") || strings.Contains(out, "Helm release openshell-system/openshell-gateway") {
		t.Errorf("-v should add what each step creates, the plain dry run not:\nplain %d lines, -v %d lines", strings.Count(out, "\n"), strings.Count(verbose, "\n"))
	}
}
