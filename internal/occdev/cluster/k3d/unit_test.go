package k3d

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docker/go-connections/nat"
	k3dconfig "github.com/k3d-io/k3d/v5/pkg/config"
	k3druntimes "github.com/k3d-io/k3d/v5/pkg/runtimes"
	k3dtypes "github.com/k3d-io/k3d/v5/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// A user sets OCC_DEVELOPMENT_KUBERNETES_CLUSTER by hand; names k3d would choke on half-way are
// refused up front naming the variable, the value and the rule.
func TestCheckName(t *testing.T) {
	good := []string{"occ-dev-a", "occ-dev-abc123", "occ-dev-my-cluster-1", "occ-dev-" + strings.Repeat("x", 24)}
	for _, n := range good {
		if err := CheckName(n); err != nil {
			t.Errorf("CheckName(%q) = %v", n, err)
		}
	}
	bad := []string{"", "occ-dev-", "mycluster", "occ-dev-Abc", "occ-dev-abc-", "occ-dev-a_b", "occ-dev-" + strings.Repeat("x", 25), "occ-dev--", "k3d-occ-dev-a", "occ-dev-a.b"}
	for _, n := range bad {
		err := CheckName(n)
		var ne *NameError
		if !errors.As(err, &ne) {
			t.Errorf("CheckName(%q) = %v, want NameError", n, err)
			continue
		}
		for _, w := range []string{EnvClusterName, `"` + n + `"`, "at most 32", "end with a lowercase letter or digit", "occ-dev-"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("CheckName(%q) error %q does not mention %q", n, err, w)
			}
		}
	}
	// occ's limit is k3d's: a valid occ name never fails k3d's own check.
	if MaxNameLength != k3dtypes.DefaultClusterNameMaxLength {
		t.Fatalf("MaxNameLength %d, k3d's limit %d", MaxNameLength, k3dtypes.DefaultClusterNameMaxLength)
	}
}

// Without a configured name every up gets a fresh random one that passes the rule.
func TestResolveNameDefaultsToRandom(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		n, err := ResolveName("")
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckName(n); err != nil || len(n) != len(NamePrefix)+randomSuffixLength {
			t.Fatalf("random name %q: %v", n, err)
		}
		if seen[n] {
			t.Fatalf("random name %q repeated", n)
		}
		seen[n] = true
	}
	if n, err := ResolveName("occ-dev-mine"); err != nil || n != "occ-dev-mine" {
		t.Fatalf("ResolveName(occ-dev-mine) = %q, %v", n, err)
	}
	if _, err := ResolveName("Mine"); err == nil {
		t.Fatal("ResolveName accepted a bad name")
	}
}

type recorder struct{ objs []state.Object }

func (r *recorder) Record(o state.Object) error { r.objs = append(r.objs, o); return nil }
func (r *recorder) Forget(state.Object) error   { return nil }

func testRequest(t *testing.T) Request {
	t.Helper()
	img, err := pins.ParseImage("docker.io/rancher/k3s:v1.36.4-k3s1@sha256:edad48e12bf81c3a09ac1c05c0c0ffaaa22145980b989d6fae84543a76b83657")
	if err != nil {
		t.Fatal(err)
	}
	return Request{
		Name:      "occ-dev-unit",
		Owner:     "/tmp/occ-state",
		NodeImage: img,
		StateDir:  t.TempDir(),
		Needs:     cluster.Needs{Publish: []PortMapping{{HostPort: 13000, NodePort: 30080}}},
		Settings:  Settings{APIPort: 16443, PodSecurityExemptRuntimeClasses: []string{"openshell-sandbox"}},
		Recorder:  &recorder{},
	}
}

// Every bad field is reported at once, before anything is created, each naming field, value and
// rule.
func TestRequestValidation(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Request)
		want   string
	}{
		{"bad name", func(r *Request) { r.Name = "dev" }, EnvClusterName},
		{"no owner", func(r *Request) { r.Owner = " " }, "owner"},
		{"tag-only node image", func(r *Request) { r.NodeImage.Digest = "" }, "node image"},
		{"relative state dir", func(r *Request) { r.StateDir = "state" }, "absolute"},
		{"state dir with colon", func(r *Request) { r.StateDir = "/tmp/a:b" }, "':'"},
		{"missing state dir", func(r *Request) { r.StateDir = "/nonexistent/occ-state" }, "existing directory"},
		{"no recorder", func(r *Request) { r.Recorder = nil }, "Recorder"},
		{"API port zero", func(r *Request) { r.APIPort = 0 }, "FreeLoopbackPort"},
		{"API port too big", func(r *Request) { r.APIPort = 70000 }, "between 1 and 65535"},
		{"port clash", func(r *Request) { r.Publish[0].HostPort = r.APIPort }, "also used as API port"},
		{"NodePort out of range", func(r *Request) { r.Publish[0].NodePort = 8080 }, "30000-32767"},
		{"own network name", func(r *Request) { r.Network = "k3d-occ-dev-unit" }, "own network"},
		{"host network", func(r *Request) { r.Network = "host" }, "built-in"},
		{"disk threshold", func(r *Request) { r.DiskThresholdPercent = 50 }, "between 1 and 20"},
		{"negative timeout", func(r *Request) { r.Timeout = -1 }, "positive"},
		{"empty runtime class", func(r *Request) { r.PodSecurityExemptRuntimeClasses = []string{""} }, "RuntimeClass"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := testRequest(t)
			c.change(&r)
			err := r.validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("validate = %v, want an error mentioning %q", err, c.want)
			}
		})
	}
	r := testRequest(t)
	if err := r.validate(); err != nil {
		t.Fatalf("valid request refused: %v", err)
	}
	// The dry run checks the fields alone: no state directory, owner, recorder or port yet.
	dry := testRequest(t)
	dry.StateDir, dry.Owner, dry.Recorder, dry.APIPort = "/tmp/occ-dev-not-yet", "", nil, 0
	if err := dry.Check(); err != nil {
		t.Fatalf("Check of a dry-run request: %v", err)
	}
	dry.Name = "bad"
	if err := dry.Check(); err == nil || !strings.Contains(err.Error(), EnvClusterName) {
		t.Fatalf("Check accepted a bad name: %v", err)
	}
	if r.DiskThresholdPercent != DefaultDiskThresholdPercent || r.Timeout != DefaultTimeout {
		t.Fatalf("defaults not filled: %+v", r)
	}
}

// The k3d configuration occ builds goes through k3d's own transform and validation (what
// `k3d cluster create --config` does) and comes out as the reference's cluster, without a load
// balancer: one server on the pinned digest, API and NodePorts on 127.0.0.1 of server-0, the
// admission file mounted and passed to the apiserver, legacy iptables, kubelet thresholds that
// never collect imported images, the owner label, and no kubeconfig writing.
func TestSimpleConfigTransformsToTheReferenceCluster(t *testing.T) {
	r := testRequest(t)
	if err := r.validate(); err != nil {
		t.Fatal(err)
	}
	admission, err := writeAdmissionConfig(r.StateDir, r.PodSecurityExemptRuntimeClasses)
	if err != nil {
		t.Fatal(err)
	}
	sc := r.simpleConfig(admission, "")
	if err := k3dconfig.ProcessSimpleConfig(&sc); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cc, err := k3dconfig.TransformSimpleToClusterConfig(ctx, k3druntimes.Docker, sc, "")
	if err != nil {
		t.Fatalf("transform: %v", err)
	}
	if cc, err = k3dconfig.ProcessClusterConfig(*cc); err != nil {
		t.Fatal(err)
	}
	if err := k3dconfig.ValidateClusterConfig(ctx, k3druntimes.Docker, *cc); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if !cc.ClusterCreateOpts.DisableLoadBalancer || cc.Cluster.ServerLoadBalancer != nil {
		t.Error("the load balancer is not disabled")
	}
	if cc.ClusterCreateOpts.DisableImageVolume {
		t.Error("the image volume is disabled; k3d's tools node needs it")
	}
	if cc.KubeconfigOpts.UpdateDefaultKubeconfig || cc.KubeconfigOpts.SwitchCurrentContext {
		t.Error("k3d would update the default kubeconfig or switch its context")
	}
	if cc.Cluster.Network.Name != "k3d-occ-dev-unit" || cc.Cluster.Network.External {
		t.Errorf("network = %+v, want the cluster's own k3d-occ-dev-unit", cc.Cluster.Network)
	}
	api := cc.Cluster.KubeAPI
	if api.Host != "127.0.0.1" || api.Binding.HostIP != "127.0.0.1" || api.Binding.HostPort != "16443" {
		t.Errorf("API exposure = %+v, want 127.0.0.1:16443", api)
	}
	if len(cc.Cluster.Nodes) != 1 {
		t.Fatalf("%d nodes, want exactly server-0", len(cc.Cluster.Nodes))
	}
	n := cc.Cluster.Nodes[0]
	if n.Name != "k3d-occ-dev-unit-server-0" || n.Role != k3dtypes.ServerRole {
		t.Fatalf("node = %s (%s)", n.Name, n.Role)
	}
	if n.Image != "docker.io/rancher/k3s@sha256:edad48e12bf81c3a09ac1c05c0c0ffaaa22145980b989d6fae84543a76b83657" {
		t.Errorf("node image %s, want the pinned digest reference", n.Image)
	}
	for _, a := range []string{
		"--tls-san=k3d-occ-dev-unit-server-0",
		"--kubelet-arg=eviction-hard=imagefs.available<5%,nodefs.available<5%",
		"--kubelet-arg=image-gc-high-threshold=100",
		"--kubelet-arg=image-gc-low-threshold=99",
		"--kube-apiserver-arg=admission-control-config-file=/etc/occ-development/pod-security-admission.yaml",
		"--kube-controller-manager-arg=kube-api-qps=200",
		"--kube-controller-manager-arg=kube-api-burst=400",
	} {
		if !slices.Contains(n.Args, a) {
			t.Errorf("server args %q lack %q", n.Args, a)
		}
	}
	if !slices.Contains(n.Env, "IPTABLES_MODE=legacy") {
		t.Errorf("server env %q lacks IPTABLES_MODE=legacy", n.Env)
	}
	if want := admission + ":/etc/occ-development/pod-security-admission.yaml:ro"; !slices.Contains(n.Volumes, want) {
		t.Errorf("server volumes %q lack %q", n.Volumes, want)
	}
	if n.RuntimeLabels[OwnerLabel] != "/tmp/occ-state" {
		t.Errorf("owner label = %q", n.RuntimeLabels[OwnerLabel])
	}
	b := n.Ports[nat.Port("30080/tcp")]
	if len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != "13000" {
		t.Errorf("NodePort 30080 binding = %+v, want 127.0.0.1:13000 on server-0", b)
	}
	if cc.ClusterCreateOpts.Timeout != DefaultTimeout || !cc.ClusterCreateOpts.WaitForServer {
		t.Errorf("create options = %+v", cc.ClusterCreateOpts)
	}
}

// Joining the Compose network: k3d must treat it as external (never delete it).
func TestSimpleConfigJoinsExistingNetwork(t *testing.T) {
	r := testRequest(t)
	r.Network = "oce_development"
	if err := r.validate(); err != nil {
		t.Fatal(err)
	}
	sc := r.simpleConfig("/tmp/admission.yaml", "")
	cc, err := k3dconfig.TransformSimpleToClusterConfig(context.Background(), k3druntimes.Docker, sc, "")
	if err != nil {
		t.Fatal(err)
	}
	if cc.Cluster.Network.Name != "oce_development" || !cc.Cluster.Network.External {
		t.Fatalf("network = %+v, want external oce_development", cc.Cluster.Network)
	}
}

// The admission file gives every PodSecurity mode "privileged" at "latest" and exempts the
// sandbox RuntimeClass, in the apiserver's AdmissionConfiguration format; it is 0644.
func TestAdmissionConfig(t *testing.T) {
	dir := t.TempDir()
	p, err := writeAdmissionConfig(dir, []string{"openshell-sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o644 || filepath.Dir(p) != dir {
		t.Fatalf("admission file %s: %v %v", p, fi.Mode(), err)
	}
	data, _ := os.ReadFile(p)
	var got struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Plugins    []struct {
			Name          string `json:"name"`
			Configuration struct {
				APIVersion string            `json:"apiVersion"`
				Kind       string            `json:"kind"`
				Defaults   map[string]string `json:"defaults"`
				Exemptions struct {
					RuntimeClasses []string `json:"runtimeClasses"`
				} `json:"exemptions"`
			} `json:"configuration"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatalf("admission file does not decode: %v\n%s", err, data)
	}
	if got.APIVersion != "apiserver.config.k8s.io/v1" || got.Kind != "AdmissionConfiguration" || len(got.Plugins) != 1 || got.Plugins[0].Name != "PodSecurity" {
		t.Fatalf("admission file = %+v", got)
	}
	c := got.Plugins[0].Configuration
	if c.APIVersion != "pod-security.admission.config.k8s.io/v1" || c.Kind != "PodSecurityConfiguration" {
		t.Fatalf("plugin configuration = %+v", c)
	}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		if c.Defaults[mode] != "privileged" || c.Defaults[mode+"-version"] != "latest" {
			t.Errorf("defaults %v: %s is not privileged/latest", c.Defaults, mode)
		}
	}
	if !slices.Equal(c.Exemptions.RuntimeClasses, []string{"openshell-sandbox"}) {
		t.Errorf("exempt RuntimeClasses = %v", c.Exemptions.RuntimeClasses)
	}
}

// The state entry of a cluster carries its name and identifying labels (k3d's and the owner's),
// and round-trips into the identity down checks, with the UID from the recorded access.
func TestIdentityRecord(t *testing.T) {
	id := Identity{Name: "occ-dev-x", Owner: "0011223344556677"}
	obj := id.Object()
	if obj.Type != TypeCluster || obj.Name != "occ-dev-x" || obj.Labels["app"] != "k3d" || obj.Labels["k3d.cluster"] != "occ-dev-x" || obj.Labels[OwnerLabel] != id.Owner {
		t.Fatalf("Object = %+v", obj)
	}
	back, err := IdentityOf(obj, "u-1")
	if err != nil || back != (Identity{Name: "occ-dev-x", Owner: id.Owner, UID: "u-1"}) {
		t.Fatalf("IdentityOf = %+v, %v", back, err)
	}
	if _, err := IdentityOf(state.Object{Type: compose.TypeNetwork, Name: "x"}, ""); err == nil {
		t.Fatal("IdentityOf accepted another type")
	}
	if _, err := IdentityOf(state.Object{Type: TypeCluster, Name: "occ-dev-x", Labels: map[string]string{"app": "k3d"}}, ""); err == nil {
		t.Fatal("IdentityOf accepted a record without the owner label")
	}
}

// The dry run lists the cluster with its pinned image, its API address, its published ports, its
// network and the files it writes, without touching anything: the containers, network and
// volume as typed engine objects by the names Create gives them, and the files at the paths and
// with the modes Create writes them with.
func TestRequestDescribe(t *testing.T) {
	r := testRequest(t)
	r.DNS = NodeDNS{Choice: DNSGiven, Address: "10.64.0.53"}
	d := r.Describe()
	got := strings.Join(d.Creates, "\n")
	for _, w := range []string{"k3d cluster occ-dev-unit", "k3d-occ-dev-unit-server-0", r.NodeImage.DigestReference(), "published port 127.0.0.1:16443 (to the Kubernetes API (https) of k3d-occ-dev-unit-server-0)",
		"openshell-sandbox", "published port 127.0.0.1:13000 (to NodePort 30080 of k3d-occ-dev-unit-server-0)", "Docker network k3d-occ-dev-unit (removed", "k3d-occ-dev-unit-images", "container-kubeconfig (0644"} {
		if !strings.Contains(got, w) {
			t.Errorf("Describe does not mention %q:\n%s", w, got)
		}
	}
	var engineObjects []string
	for _, e := range d.EngineObjects {
		engineObjects = append(engineObjects, e.Kind+" "+e.Name)
	}
	if want := []string{"Docker container " + serverNode(r.Name), "published port 127.0.0.1:16443", "published port 127.0.0.1:13000", "Docker network " + ownNetwork(r.Name), "Docker volume " + imageVolume(r.Name), "Docker container " + toolsNode(r.Name)}; !slices.Equal(engineObjects, want) {
		t.Errorf("engine objects %q, want %q", engineObjects, want)
	}
	var files []string
	for _, f := range d.Files {
		files = append(files, f.Path+" "+f.Mode)
	}
	mode := func(m os.FileMode) string { return fmt.Sprintf("%04o", m) }
	want := []string{filepath.Join(r.StateDir, AdmissionFile) + " " + mode(admissionFileMode), filepath.Join(r.StateDir, KubeconfigFile) + " " + mode(kubeconfigMode),
		filepath.Join(r.StateDir, ContainerKubeconfigFile) + " " + mode(containerKubeconfigMode), filepath.Join(r.StateDir, ResolverFile) + " " + mode(resolverFileMode)}
	if !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	if len(d.Creates) != 1+len(d.EngineObjects)+len(d.Files) {
		t.Errorf("%d lines for %d engine objects, %d files and %d published ports:\n%s", len(d.Creates), len(d.EngineObjects), len(d.Files), len(r.Publish), got)
	}
	// Create writes the admission configuration and the resolver there, with those modes.
	if p, err := writeAdmissionConfig(r.StateDir, nil); err != nil || p != filepath.Join(r.StateDir, AdmissionFile) {
		t.Fatalf("admission configuration at %s: %v", p, err)
	}
	if p, err := writeResolvConf(r.StateDir, "10.64.0.53"); err != nil || p != filepath.Join(r.StateDir, ResolverFile) {
		t.Fatalf("resolver at %s: %v", p, err)
	}
	for _, f := range d.Files {
		if fi, err := os.Stat(f.Path); err == nil && mode(fi.Mode().Perm()) != f.Mode {
			t.Errorf("%s has mode %s, the dry run says %s", f.Path, mode(fi.Mode().Perm()), f.Mode)
		}
	}
	free := r
	free.APIPort = 0
	if got := strings.Join(free.Describe().Creates, "\n"); !strings.Contains(got, "published port 127.0.0.1 (a free port chosen at creation, to the Kubernetes API (https) of k3d-occ-dev-unit-server-0)") {
		t.Errorf("Describe without an API port:\n%s", got)
	}
	r.Network = "oce_development"
	if got := strings.Join(r.Describe().Creates, "\n"); !strings.Contains(got, "Docker network oce_development (joined by the node; left in place by down)") {
		t.Errorf("Describe with a joined network:\n%s", got)
	}
}

// The flow hands the provider one cluster.Request: the control plane's needs and the provider's
// own settings arrive in Create's Request as they are, and settings of another provider are
// refused rather than silently replaced by the defaults.
func TestClusterRequestBecomesTheCreateRequest(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	needs := cluster.Needs{Network: "oce_development", Publish: []cluster.Port{{HostPort: 3100, NodePort: 30080}}}
	settings := Settings{APIPort: 16443, DiskThresholdPercent: 7, DNS: NodeDNS{Choice: DNSGiven, Address: "10.0.0.53"}, PodSecurityExemptRuntimeClasses: []string{"openshell-sandbox"}}
	req := cluster.Request{Name: "occ-dev-unit", KubeconfigFile: filepath.Join(dir, KubeconfigFile), ContainerKubeconfigFile: filepath.Join(dir, ContainerKubeconfigFile),
		Pins: set, Needs: needs, Settings: settings}
	r, err := (&ClusterProvider{}).request(req)
	if err != nil {
		t.Fatal(err)
	}
	if r.StateDir != dir || r.Network != needs.Network || !slices.Equal(r.Publish, needs.Publish) || r.APIPort != 16443 || r.DiskThresholdPercent != 7 || r.DNS != settings.DNS ||
		r.NodeImage != set.K3s.Image || r.DNSCheckName != "ghcr.io" {
		t.Errorf("Create's request = %+v", r)
	}
	d := (&ClusterProvider{}).Describe(req)
	if got := strings.Join(d.Creates, "\n"); !strings.Contains(got, "published port 127.0.0.1:3100 (to NodePort 30080 of k3d-occ-dev-unit-server-0)") || !strings.Contains(got, "Docker network oce_development (joined by the node") {
		t.Errorf("Describe = %s", got)
	}
	// The engine the state records names the network, volume and engine of the description.
	req.EngineKind, req.Engine = state.EnginePodman, locate.Endpoint{Socket: "/run/podman/podman.sock"}
	pd := (&ClusterProvider{}).Describe(req)
	if got := strings.Join(pd.Creates, "\n"); !strings.Contains(got, "Podman network oce_development (joined by the node") || !strings.Contains(got, "Podman volume k3d-occ-dev-unit-images") || strings.Contains(got, "Docker") ||
		pd.Note != "in the Podman engine at unix:///run/podman/podman.sock; the user's kubeconfig is never written" {
		t.Errorf("Describe on Podman = %s (note %q)", got, pd.Note)
	}
	if d.Preflight != "the host's kernel gives the node the legacy iptables nat table (on Linux, when the engine runs on it), no k3d cluster occ-dev-unit exists and a chosen API port is free" {
		t.Errorf("Describe's preflight = %q", d.Preflight)
	}
	req.Settings = struct{ APIPort int }{16443}
	if err := (&ClusterProvider{}).Check(req); err == nil || !strings.Contains(err.Error(), "not k3d settings") {
		t.Errorf("Check with another provider's settings = %v", err)
	}
}

// The API port is never one the plan chose for others and has not bound yet: the system may hand
// out a port twice while it is free (a collision seen in make test: the Compose controller's port
// "is already allocated" by the k3d node that took it first).
func TestTheAPIPortAvoidsTheControlPlanesPorts(t *testing.T) {
	handed := []int{41000, 41001, 41000, 41002}
	next := func() (int, error) {
		p := handed[0]
		handed = handed[1:]
		return p, nil
	}
	needs := cluster.Needs{HostPorts: []int{41000}, Publish: []cluster.Port{{HostPort: 41001, NodePort: 30080}}}
	if got := needs.TakenPorts(); !slices.Equal(got, []int{41000, 41001}) {
		t.Fatalf("taken ports %v, want the control plane's and the published ones", got)
	}
	if port, err := freePort(next, needs.TakenPorts()); err != nil || port != 41002 {
		t.Fatalf("port %d, %v; want 41002, the first handed out that is not taken", port, err)
	}
	always := func() (int, error) { return 41000, nil }
	if _, err := freePort(always, needs.TakenPorts()); err == nil || !strings.Contains(err.Error(), "other than [41000 41001]") {
		t.Fatalf("a system that hands out only taken ports: %v", err)
	}
	if port, err := FreeLoopbackPort(); err != nil || port == 0 {
		t.Fatalf("a free port: %d, %v", port, err)
	}
}
