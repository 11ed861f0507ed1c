package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/occdevtest"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// isolateDev clears the OCC_DEVELOPMENT_* settings a developer's shell may carry and points the
// default state and cache locations into the test's own directories. The test bed is started
// first: it finds its cached kube-apiserver and etcd through XDG_CACHE_HOME.
func isolateDev(t *testing.T) string {
	t.Helper()
	testbed.Config(t)
	dir := isolate(t)
	for _, k := range []string{"OCC_DEVELOPMENT_STATE_DIRECTORY", "OCC_DEVELOPMENT_CONTROL_PLANE", "OCC_DEVELOPMENT_KUBERNETES_NAMESPACE",
		"OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS", "OCC_DEVELOPMENT_PIN_FILE", "OCC_DEVELOPMENT_OPENSHELL_ARCHIVE",
		"OCC_DEVELOPMENT_CLUSTER_PROVIDER", "OCC_DEVELOPMENT_GATEWAY_ENDPOINT", "OCC_DEVELOPMENT_KUBERNETES_CLUSTER",
		"OCC_DEVELOPMENT_KUBERNETES_API_PORT", "OCC_DEVELOPMENT_KUBERNETES_DISK_THRESHOLD_PERCENT", "OCC_DEVELOPMENT_REPOSITORY", "OPENCLAW_DEV_PORT",
		"OCC_DEVELOPMENT_CONTROLLER_IMAGE", "OCC_KUBERNETES_RUNTIME_IMAGE", "OCC_DEVELOPMENT_NODE_BASE_IMAGE", "OCC_DEVELOPMENT_POSTGRES_IMAGE",
		occdev.EnvGatewayChart, occdev.EnvWorkspaceChart, occdev.EnvAgentSandboxManifest, k3d.EnvDNSResolver} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state-home"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache-home"))
	// The tests of the envtest bed drive the existing provider (its apiserver); the default, k3d,
	// is tested on the Docker bed (dev_k3d_test.go).
	t.Setenv("OCC_DEVELOPMENT_CLUSTER_PROVIDER", occdev.ProviderExisting)
	return dir
}

// A developer previews `occ dev up`: every step is listed with what it would create (the
// lanes that run side by side shown as such), and nothing is created or contacted — no state
// directory, no cache, no cluster.
func TestDevUpDryRunTouchesNothing(t *testing.T) {
	dir := isolateDev(t)
	stateDir := filepath.Join(dir, "dev-state")
	kubeconfig := testbed.Kubeconfig(t)
	code, out, errOut := run(t, "dev", "up", "--dry-run", "-v", "--state-dir", stateDir, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"would run 18 steps", "Claim the private state directory", "RuntimeClass openshell-sandbox", "NodePort on port 30051",
		"Helm release openshell-system/openshell-gateway", "NetworkPolicy openshell-system/openclaw-development-openshell-ingress", "Write the Installation",
		"3. Fetch the artifacts while preparing the cluster (2 lanes side by side):", "[artifacts]", "[cluster]", "3.7. Connect to the cluster (existing)"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	for _, p := range []string{stateDir, filepath.Join(dir, "cache-home"), filepath.Join(dir, "state-home")} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("dry run created %s", p)
		}
	}

	code, out, errOut = run(t, "dev", "up", "--dry-run", "-o", "json", "--control-plane", "kubernetes", "--state-dir", stateDir, "--kubeconfig", kubeconfig)
	if code != 0 {
		t.Fatalf("json dry run: exit %d, stderr %q", code, errOut)
	}
	var dr occdev.DryRun
	if err := json.Unmarshal([]byte(out), &dr); err != nil {
		t.Fatalf("dry run -o json is not JSON: %v\n%s", err, out)
	}
	if dr.Count() != 18 || len(dr.Steps) != 12 || dr.Plan.Namespace != "oce-system" || dr.Plan.ServiceType != "ClusterIP" || len(dr.Steps[2].Lanes) != 2 {
		t.Errorf("json plan: %d steps (%d top-level), namespace %q, service %q", dr.Count(), len(dr.Steps), dr.Plan.Namespace, dr.Plan.ServiceType)
	}
}

// Mistyped settings are usage errors (exit 2) that name the setting, the value and the fix,
// before anything is created.
func TestDevUpRefusesBadSettings(t *testing.T) {
	dir := isolateDev(t)
	stateDir := filepath.Join(dir, "dev-state")
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{name: "unknown cluster provider", args: []string{"--cluster-provider", "kind"}, want: []string{`--cluster-provider "kind" is not a supported cluster provider`, "use one of: existing, k3d"}},
		{name: "unknown control plane", env: map[string]string{"OCC_DEVELOPMENT_CONTROL_PLANE": "swarm"}, want: []string{`OCC_DEVELOPMENT_CONTROL_PLANE "swarm" is not supported`, "compose or kubernetes"}},
		{name: "bad namespace", args: []string{"--namespace", "Not_A_Namespace"}, want: []string{`"Not_A_Namespace" is not a valid namespace name`}},
		{name: "startup timeout out of range", env: map[string]string{"OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS": "0"}, want: []string{`OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS "0" is out of range`, "from 1 to 86400"}},
		{name: "startup timeout not a duration", args: []string{"--startup-timeout", "ten"}, want: []string{`--startup-timeout "ten" is not a duration`}},
		{name: "relative state directory", args: []string{"--state-dir", "relative/dir"}, want: []string{"refusing unsafe state directory relative/dir", "must be absolute"}},
		{name: "controller image without the runtime image", env: map[string]string{"OCC_DEVELOPMENT_CONTROL_PLANE": "kubernetes", "OCC_DEVELOPMENT_CLUSTER_PROVIDER": "k3d",
			"OCC_DEVELOPMENT_REPOSITORY": ocebed.Checkout(t, strings.Repeat("c", 40)), "OCC_DEVELOPMENT_CONTROLLER_IMAGE": "ghcr.io/openclaw/controller@sha256:" + strings.Repeat("a", 64)},
			want: []string{"OCC_DEVELOPMENT_CONTROLLER_IMAGE and OCC_KUBERNETES_RUNTIME_IMAGE must be selected together", "OCC_KUBERNETES_RUNTIME_IMAGE is unset"}},
		{name: "selected images by tag", env: map[string]string{"OCC_DEVELOPMENT_CONTROL_PLANE": "kubernetes", "OCC_DEVELOPMENT_CLUSTER_PROVIDER": "k3d",
			"OCC_DEVELOPMENT_REPOSITORY":       ocebed.Checkout(t, strings.Repeat("c", 40)),
			"OCC_DEVELOPMENT_CONTROLLER_IMAGE": "ghcr.io/openclaw/controller:main", "OCC_KUBERNETES_RUNTIME_IMAGE": "ghcr.io/openclaw/runtime@sha256:" + strings.Repeat("b", 64)},
			want: []string{"selected controller and runtime images must use immutable sha256 digest references", `OCC_DEVELOPMENT_CONTROLLER_IMAGE="ghcr.io/openclaw/controller:main"`}},
		{name: "PostgreSQL image by tag", env: map[string]string{"OCC_DEVELOPMENT_CONTROL_PLANE": "kubernetes", "OCC_DEVELOPMENT_POSTGRES_IMAGE": "postgres:18"},
			want: []string{`OCC_DEVELOPMENT_POSTGRES_IMAGE "postgres:18" is refused`, "by digest"}},
		{name: "API port not a number", env: map[string]string{"OCC_DEVELOPMENT_CONTROL_PLANE": "kubernetes", "OPENCLAW_DEV_PORT": "http"},
			want: []string{`OPENCLAW_DEV_PORT "http" is not a number`}},
		{name: "repository that is no checkout", env: map[string]string{"OCC_DEVELOPMENT_CONTROL_PLANE": "kubernetes"}, args: []string{"--repository", "/"},
			want: []string{`--repository "/" is not an OpenClaw Enterprise checkout`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"dev", "up", "--state-dir", stateDir}, tc.args...)
			code, _, errOut := run(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (usage); stderr %q", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q: %s", w, errOut)
				}
			}
			if _, err := os.Stat(stateDir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a refused up created the state directory")
			}
			if _, err := os.Stat("relative"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a refused up created a relative state directory")
			}
		})
	}
}

// A developer runs the three commands the way they would in a terminal, with JSON output:
// up reports where everything is, status shows every object present, down removes it all,
// and the Gateway's private key appears in none of the output.
func TestDevCommandsEndToEnd(t *testing.T) {
	b := occdevtest.New(t)
	isolateDev(t)
	t.Setenv("OCC_DEVELOPMENT_PIN_FILE", b.PinFile)
	t.Setenv("OCC_DEVELOPMENT_STATE_DIRECTORY", b.StateDir)
	common := []string{"--kubeconfig", b.Kubeconfig, "--control-plane", "kubernetes", "--namespace", b.Namespace,
		"--openshell-archive", b.Archive, "--gateway-endpoint", b.Gateway.Addr(), "--startup-timeout", "30s"}
	// The artifact cache comes from XDG_CACHE_HOME (set by isolateDev).
	code, out, errOut := run(t, append([]string{"dev", "up", "-o", "json"}, common...)...)
	if code != 0 {
		t.Fatalf("dev up: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	var sum occdev.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("dev up -o json is not JSON: %v\n%s", err, out)
	}
	if sum.StateDirectory != b.StateDir || !strings.HasSuffix(sum.DownCommand, "dev down --state-dir "+b.StateDir) {
		t.Errorf("summary: %+v", sum)
	}
	// Progress went to stderr (stdout holds only the document), one plain line per step.
	// Steps of the two lanes name their lane; the group has a line of its own.
	if n := strings.Count(errOut, " ✓ "); n != 19 || strings.Contains(errOut, "\x1b[") || strings.Count(errOut, "[artifacts] (") != 6 || strings.Count(errOut, "[cluster] (") != 1 {
		t.Errorf("want 19 plain progress lines on stderr (6 of lane artifacts, 1 of lane cluster), got %d:\n%s", n, errOut)
	}

	code, statusOut, errOut := run(t, "dev", "status", "-o", "json")
	if code != 0 {
		t.Fatalf("dev status: exit %d, stderr %s", code, errOut)
	}
	var st observe.Status
	if err := json.Unmarshal([]byte(statusOut), &st); err != nil {
		t.Fatalf("dev status -o json: %v\n%s", err, statusOut)
	}
	if !st.Reachable || len(st.Objects) == 0 {
		t.Fatalf("status: %+v", st)
	}
	for _, o := range st.Objects {
		if o.State != state.Present {
			t.Errorf("status: %s %s is %s", o.Kind, o.Name, o.State)
		}
	}
	code, table, _ := run(t, "dev", "status")
	if n := len(st.Objects); code != 0 || !strings.Contains(table, fmt.Sprintf("Objects:       %d recorded: %d present", n, n)) || strings.Contains(table, "KIND") {
		t.Errorf("dev status table (every object present: counted, not listed): exit %d\n%s", code, table)
	}
	code, table, _ = run(t, "dev", "status", "-v")
	if code != 0 || !strings.Contains(table, "KIND") || strings.Count(table, "present") < len(st.Objects) {
		t.Errorf("dev status -v lists every object: exit %d\n%s", code, table)
	}

	secret, err := b.Client.CoreV1().Secrets(b.Namespace).Get(context.Background(), platform.GatewayJWTSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keyBody := strings.Split(string(secret.Data["signing.pem"]), "\n")[1]

	code, downOut, downErr := run(t, "dev", "down")
	if code != 0 {
		t.Fatalf("dev down: exit %d\n%s\n%s", code, downOut, downErr)
	}
	if !strings.Contains(downOut, "removed Secret") && !strings.Contains(downOut, "removed v1 Secret") {
		t.Errorf("down does not list what it removed:\n%s", downOut)
	}
	for _, s := range []string{out, errOut, statusOut, table, downOut, downErr} {
		if strings.Contains(s, keyBody) {
			t.Fatal("the Gateway JWT private key appears in command output")
		}
	}
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory left after dev down")
	}
}

// BenchmarkDryRun measures `occ dev up --dry-run` end to end in-process: flag and environment
// resolution, plan validation and printing every step.
func BenchmarkDryRun(b *testing.B) {
	dir := b.TempDir()
	b.Setenv("XDG_CONFIG_HOME", dir)
	b.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	b.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	// The dry run reads the kubeconfig (a missing one is a reported problem); it contacts nothing.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["dev"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	cfg.Contexts["dev"] = &clientcmdapi.Context{Cluster: "dev"}
	cfg.CurrentContext = "dev"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		b.Fatal(err)
	}
	args := []string{"dev", "up", "--dry-run", "--state-dir", filepath.Join(dir, "dev"), "--kubeconfig", kubeconfig}
	b.ReportAllocs()
	for b.Loop() {
		var out, errOut bytes.Buffer
		if code := Execute(context.Background(), args, strings.NewReader(""), &out, &errOut); code != 0 {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
}
