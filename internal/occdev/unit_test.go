package occdev

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
)

// dockerAt is a Docker location seam: DOCKER_HOST says host, nothing else is set.
func dockerAt(host string) locate.Env {
	return locate.Env{Getenv: func(k string) string {
		if k == locate.EnvDockerHost {
			return host
		}
		return ""
	}, Home: "/nonexistent"}
}

// Profiles decide namespace and Service; the k3d provider is the default of both, with a random
// occ-dev- name, pullPolicy Never and the engine located (not contacted); bad values are option
// errors before anything runs.
func TestResolvePlan(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	sock := dockerAt("unix:///run/user/1000/docker.sock")
	p, err := resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", Docker: sock})
	if err != nil {
		t.Fatal(err)
	}
	if p.ControlPlane != ControlPlaneCompose || p.Namespace != "openshell-system" || p.ServiceType != "NodePort" || p.NodePort != 30051 || p.StartupTimeout != 600*time.Second || p.ClusterProvider != "k3d" {
		t.Errorf("default plan: %+v", p)
	}
	if !strings.HasPrefix(p.ClusterName, "occ-dev-") || len(p.ClusterName) != len("occ-dev-")+10 || p.PullPolicy != "Never" || p.APIPort != 0 || p.DiskThresholdPercent != 5 ||
		p.Engine.String() != "unix:///run/user/1000/docker.sock" || p.EngineSource != "DOCKER_HOST" || !p.importsImages() || len(p.Images) != 5 {
		t.Errorf("default k3d plan: %+v", p)
	}
	p, err = resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", ControlPlane: ControlPlaneKubernetes, Docker: sock, ClusterSettings: K3dSettings(k3d.ClusterOptions{ClusterName: "occ-dev-mine", APIPort: 6550})})
	if err != nil || p.Namespace != "oce-system" || p.ServiceType != "ClusterIP" || p.NodePort != 0 || p.ClusterName != "occ-dev-mine" || p.APIPort != 6550 {
		t.Errorf("kubernetes plan: %+v, %v", p, err)
	}
	p, err = resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", ClusterProvider: ProviderExisting})
	if err != nil || p.PullPolicy != "IfNotPresent" || !p.Engine.IsZero() || p.importsImages() || len(p.Images) != 3 {
		t.Errorf("existing plan: %+v, %v", p, err)
	}
	for _, tc := range []struct {
		o    UpOptions
		want string
	}{
		{UpOptions{ClusterProvider: "kind"}, "is not a supported cluster provider"},
		{UpOptions{ControlPlane: "swarm"}, "is not supported"},
		{UpOptions{Namespace: "UPPER"}, "is not a valid namespace name"},
		{UpOptions{StartupTimeout: time.Millisecond}, "must be between 1s and 24h"},
		{UpOptions{Context: "kind-dev"}, `--context "kind-dev" selects an existing cluster, but --cluster-provider k3d creates its own`},
		{UpOptions{Kubeconfig: "/tmp/kc"}, `--kubeconfig "/tmp/kc" selects an existing cluster`},
		{UpOptions{ClusterSettings: K3dSettings(k3d.ClusterOptions{ClusterName: "dev"})}, `OCC_DEVELOPMENT_KUBERNETES_CLUSTER "dev" must start with "occ-dev-"`},
		{UpOptions{ClusterSettings: K3dSettings(k3d.ClusterOptions{ClusterName: "occ-dev-" + strings.Repeat("a", 30)})}, "at most 32 characters"},
		{UpOptions{ClusterSettings: K3dSettings(k3d.ClusterOptions{ClusterName: "occ-dev-x-"})}, "end with a lowercase letter or digit"},
		{UpOptions{ClusterSettings: K3dSettings(k3d.ClusterOptions{APIPort: 70000})}, `--api-port (OCC_DEVELOPMENT_KUBERNETES_API_PORT) "70000" must be between 1 and 65535`},
		{UpOptions{ClusterSettings: K3dSettings(k3d.ClusterOptions{DiskThresholdPercent: 21})}, `OCC_DEVELOPMENT_KUBERNETES_DISK_THRESHOLD_PERCENT) "21" must be between 1 and 20`},
		{UpOptions{ClusterProvider: ProviderExisting, ClusterSettings: K3dSettings(k3d.ClusterOptions{ClusterName: "occ-dev-x"})}, "configures the k3d cluster occ creates, and --cluster-provider existing creates none"},
		{UpOptions{ClusterProvider: ProviderExisting, ClusterSettings: K3dSettings(k3d.ClusterOptions{APIPort: 6443})}, "--api-port (OCC_DEVELOPMENT_KUBERNETES_API_PORT)"},
		{UpOptions{ClusterProvider: ProviderExisting, K3sImage: "rancher/k3s:v1.35.8-k3s1"}, `OCC_DEVELOPMENT_K3S_IMAGE "rancher/k3s:v1.35.8-k3s1" selects the node image of the k3d cluster occ creates`},
	} {
		tc.o.Docker = sock
		_, err := resolvePlan(tc.o)
		var oe *OptionError
		switch {
		case err == nil:
			t.Errorf("%+v accepted", tc.o)
		case !errors.As(err, &oe):
			t.Errorf("%+v: %T is not an OptionError: %v", tc.o, err, err)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	// OCC_DEVELOPMENT_K3S_IMAGE replaces the pinned node image in this plan only: by digest it
	// is used as given; by tag it is planned as a tag (the pull resolves it), and the Gateway
	// chart is rendered for the Kubernetes version its tag names.
	pinned, err := resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", Docker: sock})
	if err != nil {
		t.Fatal(err)
	}
	byDigest := "registry.example:5000/mirror/k3s:v1.35.8-k3s1@sha256:" + strings.Repeat("b", 64)
	for _, tc := range []struct{ value, image, version string }{
		{byDigest, "registry.example:5000/mirror/k3s@sha256:" + strings.Repeat("b", 64), "v1.35.8"},
		{"rancher/k3s:v1.36.1-k3s2", "docker.io/rancher/k3s:v1.36.1-k3s2", "v1.36.1"},
	} {
		p, err := resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", Docker: sock, K3sImage: tc.value})
		if err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		if p.Images["k3sNode"] != tc.image || p.GatewayRender.KubernetesVersion != tc.version || !strings.Contains(p.GatewayRender.Source, "OCC_DEVELOPMENT_K3S_IMAGE") ||
			p.NodeImage == nil || p.NodeImage.Tag != !strings.Contains(tc.value, "@") {
			t.Errorf("%s: node image %q, render %+v, selection %+v", tc.value, p.Images["k3sNode"], p.GatewayRender, p.NodeImage)
		}
		if p.pins == pinned.pins || p.pins.K3s.Image == pinned.pins.K3s.Image {
			t.Errorf("%s: the plan's pins are the pin set itself, or still hold the pinned node image", tc.value)
		}
	}
	if again, _ := resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", Docker: sock}); again.pins.K3s.Image != pinned.pins.K3s.Image {
		t.Errorf("a selected node image changed the pins of the next plan: %s", again.pins.K3s.Image)
	}

	// A remote engine is refused before anything, naming the setting it came from and the fix.
	_, err = resolvePlan(UpOptions{Docker: dockerAt("tcp://10.0.0.5:2376")})
	var oe *OptionError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), `DOCKER_HOST "tcp://10.0.0.5:2376" is not a local unix socket`) || !strings.Contains(err.Error(), "set DOCKER_HOST=unix://") {
		t.Errorf("remote engine: %v", err)
	}
}

// The printed commands survive being pasted into a shell.
func TestDownCommandQuoting(t *testing.T) {
	if got := DownCommand("", "/home/dev/.local/state/occ/dev"); got != "occ dev down --state-dir /home/dev/.local/state/occ/dev" {
		t.Errorf("plain: %s", got)
	}
	if got := DownCommand("/opt/my tools/occ", "/tmp/it's here"); got != `'/opt/my tools/occ' dev down --state-dir '/tmp/it'\''s here'` {
		t.Errorf("quoted: %s", got)
	}
}
