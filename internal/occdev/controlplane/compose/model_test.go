package compose

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// modelBed is a fixture copy and state directory for tests that only load models (no engine).
type modelBed struct {
	t        *testing.T
	checkout string
	state    string
}

func newModelBed(t *testing.T) *modelBed {
	return &modelBed{t: t, checkout: ocebed.Checkout(t, fixtureCommit), state: privateDir(t)}
}

func (b *modelBed) load(files []string, env map[string]string) (*Model, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Load(ctx, LoadOptions{Checkout: b.checkout, Project: "occ-model-test", StateDir: b.state, User: UserOptions{Files: files}, Environment: env})
}

// override writes a user Compose file (passed with -f) into the checkout copy.
func (b *modelBed) override(name, content string) string {
	b.t.Helper()
	return writeCheckoutFile(b.t, b.checkout, name, content)
}

// writeCheckoutFile writes a file (a user Compose file) into a fixture checkout copy and returns
// its path.
func writeCheckoutFile(t *testing.T, checkout, name, content string) string {
	t.Helper()
	p := filepath.Join(checkout, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The default render of the OCE checkout: the development variables are set, the bridge gateway
// is filled from the subnet, every resource carries its Compose-owned name, and the API URL is
// the controller's loopback publication.
func TestLoadFixtureModel(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load(nil, map[string]string{"OPENCLAW_DEV_PORT": "3999", "OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR": "10.99.7.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	if m.APIURL != "http://127.0.0.1:3999" {
		t.Errorf("API URL %q", m.APIURL)
	}
	if m.Network != (Network{Name: "occ-model-test_development", Subnet: "10.99.7.0/24", Gateway: "10.99.7.1"}) {
		t.Errorf("network %+v", m.Network)
	}
	if got := m.Project.Networks[NetworkKey].Ipam.Config[0].Gateway; got != "10.99.7.1" {
		t.Errorf("gateway in the model %q", got)
	}
	names := m.Names()
	if strings.Join(names.Volumes, ",") != "occ-model-test_occ_bootstrap_data,occ-model-test_occ_configuration_data,occ-model-test_occ_postgres_data" {
		t.Errorf("volumes %v", names.Volumes)
	}
	ctl := m.Project.Services[ServiceController]
	var mounts []string
	for _, v := range ctl.Volumes {
		mounts = append(mounts, v.Source+"->"+v.Target)
	}
	for _, want := range []string{
		filepath.Join(b.state, InstallationConfigName) + "->/run/openclaw-development/installation.yaml",
		filepath.Join(b.state, ContainerKubeconfigName) + "->/run/openclaw-development/kubeconfig",
	} {
		if !strings.Contains(strings.Join(mounts, " "), want) {
			t.Errorf("controller mounts %v lack %s", mounts, want)
		}
	}
	if w := m.Project.Services[ServiceWorker]; w.Environment["OCC_WORKER_READINESS_PATH"] == nil || *w.Environment["OCC_WORKER_READINESS_PATH"] != "/tmp/openclaw-worker-ready" {
		t.Errorf("worker-kubernetes environment %v", w.Environment)
	}
}

// A developer on Podman: the checkout's compose.podman.yaml is layered after
// compose.kubernetes.yaml with OCC_CONTAINER_ENGINE_SOCKET set to Podman's socket (its Docker
// Compute worker, never started here, mounts it), a user's file still wins over it, and the
// overlay is never read on Docker or when the checkout has none.
func TestLoadLayersThePodmanOverlayOnPodman(t *testing.T) {
	ctx := context.Background()
	b := newModelBed(t)
	socket := "/run/podman/podman.sock"
	workerMounts := func(m *Model) []string {
		var out []string
		for _, v := range m.Project.Services[ServiceDockerWorker].Volumes {
			out = append(out, v.Source+"->"+v.Target)
		}
		return out
	}
	user := b.override("mine.yaml", "services:\n  worker:\n    security_opt: [label=type:container_t]\n")
	m, err := Load(ctx, LoadOptions{Checkout: b.checkout, Project: "occ-model-test", StateDir: b.state, Engine: engine.Podman, EngineSocket: socket, User: UserOptions{Files: []string{user}}})
	if err != nil {
		t.Fatal(err)
	}
	files := m.Project.ComposeFiles
	want := []string{filepath.Join(b.checkout, FileBase), filepath.Join(b.checkout, FileKubernetes), filepath.Join(b.checkout, FilePodman), user}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("Compose files %q, want %q", files, want)
	}
	if got := workerMounts(m); !slices.Contains(got, socket+"->/var/run/docker.sock") {
		t.Errorf("worker mounts %v lack the Podman socket", got)
	}
	if got := m.Project.Services[ServiceDockerWorker].SecurityOpt; !slices.Contains(got, "label=type:container_t") {
		t.Errorf("worker security_opt %v: the user's file did not win over the Podman overlay", got)
	}
	if len(m.Added) != 0 || m.status[ServiceDockerWorker].Started {
		t.Errorf("the Podman overlay changed what starts: added %v, worker %+v", m.Added, m.status[ServiceDockerWorker])
	}

	docker, err := b.load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The records of the project's network and volumes name the engine that makes them.
	recordNames := func(m *Model) string {
		var out []string
		for _, o := range m.Records() {
			out = append(out, o.String())
		}
		return strings.Join(out, "; ")
	}
	if got := recordNames(m); !strings.Contains(got, "Podman network ") || !strings.Contains(got, "Podman volume ") || strings.Contains(got, "Docker") {
		t.Errorf("the records on Podman: %s", got)
	}
	if got := recordNames(docker); !strings.Contains(got, "Docker network ") || !strings.Contains(got, "Docker volume ") || strings.Contains(got, "Podman") {
		t.Errorf("the records on Docker: %s", got)
	}
	if slices.Contains(docker.Project.ComposeFiles, filepath.Join(b.checkout, FilePodman)) || slices.Contains(workerMounts(docker), socket+"->/var/run/docker.sock") {
		t.Errorf("on Docker the Podman overlay was read: files %q, worker mounts %v", docker.Project.ComposeFiles, workerMounts(docker))
	}

	if err := os.Remove(filepath.Join(b.checkout, FilePodman)); err != nil {
		t.Fatal(err)
	}
	without, err := Load(ctx, LoadOptions{Checkout: b.checkout, Project: "occ-model-test", StateDir: b.state, Engine: engine.Podman, EngineSocket: socket})
	if err != nil {
		t.Fatalf("Podman without compose.podman.yaml: %v", err)
	}
	if len(without.Project.ComposeFiles) != 2 {
		t.Errorf("Compose files %q, want the checkout's two", without.Project.ComposeFiles)
	}
}

// podmanish is a kind registered by these tests alone that Compose treats as Podman, as an
// engine behind Podman's Docker-compatible API would register itself.
var podmanish = engine.Register(engine.Registration{Kind: "podmanish", Name: "Podmanish", Component: "Podmanish Engine", ComposePodman: true, Builder: engine.Buildah})

// An engine of another kind that Compose must run as on Podman: the overlay is layered by the
// kind's registration, not by its name, and the records name that kind; a kind whose
// registration does not say so never reads the overlay.
func TestThePodmanOverlayFollowsTheKindsRegistration(t *testing.T) {
	b := newModelBed(t)
	socket := "/run/podmanish.sock"
	for _, c := range []struct {
		kind    engine.Kind
		overlay bool
		records string
	}{{podmanish.Kind, true, "Podmanish network "}, {engine.Podman, true, "Podman network "}, {engine.Docker, false, "Docker network "}, {"", false, "Docker network "}} {
		m, err := Load(context.Background(), LoadOptions{Checkout: b.checkout, Project: "occ-model-test", StateDir: b.state, Engine: c.kind, EngineSocket: socket})
		if err != nil {
			t.Fatalf("kind %q: %v", c.kind, err)
		}
		if got := slices.Contains(m.Project.ComposeFiles, filepath.Join(b.checkout, FilePodman)); got != c.overlay {
			t.Errorf("kind %q: Compose files %q, want the Podman overlay %v", c.kind, m.Project.ComposeFiles, c.overlay)
		}
		var names []string
		for _, o := range m.Records() {
			names = append(names, o.String())
		}
		if got := strings.Join(names, "; "); !strings.Contains(got, c.records) {
			t.Errorf("kind %q: records %s, want %q", c.kind, got, c.records)
		}
	}
}

// occ's own variables win over a user's environment and env file: a stale
// OCC_DEVELOPMENT_NETWORK_NAME in the shell must not rename the network k3d joins.
func TestLoadForcesDevelopmentVariables(t *testing.T) {
	b := newModelBed(t)
	envFile := filepath.Join(b.checkout, "user.env")
	if err := os.WriteFile(envFile, []byte("OCC_DEVELOPMENT_KUBECONFIG=/elsewhere/kubeconfig\nOPENCLAW_DEV_PORT=3777\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := Load(ctx, LoadOptions{Checkout: b.checkout, Project: "occ-model-test", StateDir: b.state,
		User:        UserOptions{EnvFiles: []string{envFile}},
		Environment: map[string]string{"OCC_DEVELOPMENT_NETWORK_NAME": "someone_elses"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Network.Name != "occ-model-test_development" {
		t.Errorf("network name %q", m.Network.Name)
	}
	if m.APIURL != "http://127.0.0.1:3777" {
		t.Errorf("the env file did not apply: API URL %q", m.APIURL)
	}
	for _, v := range m.Project.Services[ServiceController].Volumes {
		if strings.HasPrefix(v.Source, "/elsewhere") {
			t.Errorf("the env file overrode the container kubeconfig: %s", v.Source)
		}
	}
}

// Each rule of the profile refuses its own bad model, naming the service, the key, the value and
// the rule, before anything runs.
func TestLoadRefusesModels(t *testing.T) {
	for _, c := range []struct {
		name, override string
		env            map[string]string
		want           []string
	}{
		{"external volume", "volumes:\n  occ_bootstrap_data:\n    external: true\n",
			nil, []string{"volumes.occ_bootstrap_data.external", "Kubernetes development cannot use external volumes"}},
		{"external network", "networks:\n  development:\n    external: true\n",
			nil, []string{"networks.development.external", "Kubernetes development cannot use external networks"}},
		{"renamed volume", "volumes:\n  occ_postgres_data:\n    name: shared_pgdata\n",
			nil, []string{`volumes.occ_postgres_data.name = "shared_pgdata"`, "<project>_<key>"}},
		{"container_name", "services:\n  postgres:\n    container_name: my-postgres\n",
			nil, []string{`service postgres: container_name = "my-postgres"`, "service postgres must use a Compose-owned container name"}},
		{"publication on all interfaces", "services:\n  postgres:\n    ports: !override\n      - \"0.0.0.0:55432:5432\"\n",
			nil, []string{`service postgres: ports[0] = "0.0.0.0:55432:5432"`, "every publication must bind loopback", `"127.0.0.1:55432:5432"`}},
		{"publication without host address", "services:\n  controller:\n    ports: !override\n      - \"3000:3000\"\n",
			nil, []string{`service controller: ports[0] = "3000:3000"`, "every publication must bind loopback"}},
		{"publication without host port", "services:\n  controller:\n    ports: !override\n      - \"127.0.0.1::3000\"\n",
			nil, []string{"service controller: ports[0]", "every publication must name one explicit host port"}},
		{"network mode", "services:\n  worker-kubernetes:\n    network_mode: host\n    networks: !reset []\n",
			nil, []string{`service worker-kubernetes: network_mode = "host"`, "must use the development network"}},
		{"no subnet", "networks:\n  development:\n    ipam: !reset {}\n",
			nil, []string{"Kubernetes development requires a Compose development network subnet"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newModelBed(t)
			_, err := b.load([]string{b.override("override.yaml", c.override)}, c.env)
			var pe *ProjectError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ProjectError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// A checkout whose compose files lack a service the flow needs (an older OCE without the
// Kubernetes worker) is refused by name.
func TestLoadRefusesMissingService(t *testing.T) {
	b := newModelBed(t)
	if err := os.WriteFile(filepath.Join(b.checkout, FileKubernetes), []byte(strings.Join([]string{
		"services:",
		"  controller:",
		"    environment:",
		"      OCC_CONFIG_PATH: /run/openclaw-development/installation.yaml",
		"networks:",
		"  development:",
		"    name: ${OCC_DEVELOPMENT_NETWORK_NAME:?Development network name is required}",
		""}, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := b.load(nil, nil)
	var pe *ProjectError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "service worker-kubernetes: services.worker-kubernetes") || !strings.Contains(err.Error(), "the development stack requires service worker-kubernetes") {
		t.Fatalf("got %v", err)
	}
}

// A project name that would produce invalid engine names is refused with the variable named.
func TestLoadRefusesProjectName(t *testing.T) {
	b := newModelBed(t)
	_, err := Load(context.Background(), LoadOptions{Checkout: b.checkout, Project: "My Project", StateDir: b.state})
	if err == nil || !strings.Contains(err.Error(), EnvProject+` "My Project" must match`) {
		t.Fatalf("got %v", err)
	}
}

// The snapshot is the model with every "$" doubled: read back without any environment it gives
// the same model, a literal "$" survives as one, and a variable-looking value is not expanded
// from the environment of a later command.
func TestSnapshotRoundTrip(t *testing.T) {
	b := newModelBed(t)
	over := b.override("override.yaml", "services:\n  controller:\n    environment:\n      LITERAL_DOLLAR: \"pa$$word and $${HOME}\"\n")
	m, err := b.load([]string{over}, map[string]string{"OPENCLAW_DEV_PORT": "3111"})
	if err != nil {
		t.Fatal(err)
	}
	if got := *m.Project.Services[ServiceController].Environment["LITERAL_DOLLAR"]; got != "pa$word and ${HOME}" {
		t.Fatalf("model value %q", got)
	}
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(snap.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot %s: %v %v", snap.Path, err, fi.Mode())
	}
	if _, err := m.WriteSnapshot(b.state); err == nil {
		t.Fatal("a second snapshot replaced the first")
	}
	t.Setenv("HOME", "/must/not/appear")
	back, err := LoadSnapshot(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := *back.Services[ServiceController].Environment["LITERAL_DOLLAR"]; got != "pa$word and ${HOME}" {
		t.Fatalf("snapshot value %q", got)
	}
	first, _ := m.Render()
	again, err := (&Model{Project: back}).Render()
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(again) {
		t.Fatalf("the snapshot does not read back to the same model:\n--- written\n%s\n--- read back\n%s", first, again)
	}
	if NamesOf(back).Networks[0] != NetworkName("occ-model-test") {
		t.Fatalf("snapshot networks %v", NamesOf(back))
	}
	// A snapshot someone else can write is not trusted.
	if err := os.Chmod(snap.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSnapshot(context.Background(), snap); err == nil || !strings.Contains(err.Error(), "must be a private regular file") {
		t.Fatalf("a group-readable snapshot: %v", err)
	}
}

// Compose options after `--`: the files and env files are kept (relative to the working
// directory), anything else is refused with the reference's message.
func TestParseArgs(t *testing.T) {
	checkout := t.TempDir()
	work, abs := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(work, "a.yaml"), filepath.Join(abs, "b.yaml"), filepath.Join(work, "c.yaml"), filepath.Join(work, "dev.env")} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts, err := ParseArgs([]string{"-f", "a.yaml", "--file=" + abs + "/b.yaml", "-fc.yaml", "--env-file", "dev.env", "--project-directory", checkout}, checkout, work)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(opts.Files, ",") != work+"/a.yaml,"+abs+"/b.yaml,"+work+"/c.yaml" || strings.Join(opts.EnvFiles, ",") != work+"/dev.env" {
		t.Fatalf("parsed %+v", opts)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "x"}, "unsupported Kubernetes Compose option: --profile"},
		{[]string{"-p", "other"}, "unsupported Kubernetes Compose option: -p"},
		{[]string{"--project-name=other"}, "unsupported Kubernetes Compose option: --project-name"},
		{[]string{"-f"}, "-f requires a file path"},
		{[]string{"--env-file="}, "--env-file requires a file path"},
		{[]string{"--project-directory"}, "--project-directory requires a path"},
		{[]string{"-f", "-"}, "-f - (standard input) is not supported"},
		{[]string{"--project-directory", "/somewhere/else"}, "Compose project directory must be the repository"},
		// A file that is not there is refused with the others' missing inputs, before anything.
		{[]string{"-f", "missing.yaml"}, "-f " + work + "/missing.yaml does not exist"},
		{[]string{"--env-file", work}, "--env-file " + work + " is not a regular file"},
	} {
		_, err := ParseArgs(c.args, checkout, work)
		var ae *ArgsError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.args, err, c.want)
		}
	}
}

// Secrets the runner knows of and URL passwords are scrubbed from output shown in errors.
func TestScrub(t *testing.T) {
	got := Scrub("connect postgresql://occ_app:occ-app-local@postgres:5432/db failed; token s3cr3t-canary-value", []string{"s3cr3t-canary-value"})
	if strings.Contains(got, "occ-app-local") || strings.Contains(got, "s3cr3t-canary-value") || !strings.Contains(got, "postgresql://occ_app:[redacted]@postgres") {
		t.Fatalf("scrubbed %q", got)
	}
}

// `dev up --dry-run` lists the services in start order with what is built, the volumes, the
// network with its gateway, and the loopback publications.
func TestPlan(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load(nil, map[string]string{"OPENCLAW_DEV_PORT": "3222", "OCC_POSTGRES_PORT": "55999", "OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR": "10.98.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Plan()
	var names []string
	for _, s := range p.Services {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "postgres migrate bootstrap controller worker-kubernetes worker" || p.Services[5].Started || !p.Services[4].Started {
		t.Errorf("services %+v", p.Services)
	}
	if p.Services[0].Image != "docker.io/library/postgres:18.6" || p.Services[1].Build != b.checkout+" target development" {
		t.Errorf("services %+v", p.Services)
	}
	if len(p.Networks) != 1 || p.Networks[0] != (PlanNetwork{Name: "occ-model-test_development", Subnet: "10.98.1.0/24", Gateway: "10.98.1.1"}) {
		t.Errorf("networks %+v", p.Networks)
	}
	if len(p.Ports) != 2 || p.Ports[0] != (PlanPublished{Service: "postgres", Host: "127.0.0.1:55999", Target: "5432/tcp"}) || p.Ports[1] != (PlanPublished{Service: "controller", Host: "127.0.0.1:3222", Target: "3000/tcp"}) {
		t.Errorf("ports %+v", p.Ports)
	}
	if p.APIURL != "http://127.0.0.1:3222" || len(p.Volumes) != 3 {
		t.Errorf("plan %+v", p)
	}
	// The same publications as ports, which k3d's own API port must not take.
	if got := m.HostPorts(); !slices.Equal(got, []int{55999, 3222}) {
		t.Errorf("host ports %v, want [55999 3222]", got)
	}
}

// An explicitly selected controller image replaces every image built from the checkout, is
// never pulled, and survives the snapshot.
func TestUseControllerImage(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.CheckoutBuiltServices(), " "); got != "bootstrap controller migrate worker worker-kubernetes" {
		t.Fatalf("built services %q", got)
	}
	const ref = "registry.example/openclaw-enterprise-controller@sha256:0000000000000000000000000000000000000000000000000000000000000001"
	if err := m.UseControllerImage(ref); err != nil {
		t.Fatal(err)
	}
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadSnapshot(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ServiceMigrate, ServiceBootstrap, ServiceController, ServiceWorker} {
		s := back.Services[name]
		if s.Build != nil || s.Image != ref || s.PullPolicy != "never" {
			t.Errorf("%s: build %v image %q pull %q", name, s.Build, s.Image, s.PullPolicy)
		}
	}
	if back.Services[ServicePostgres].Image != "docker.io/library/postgres:18.6" {
		t.Errorf("postgres image changed to %q", back.Services[ServicePostgres].Image)
	}
}

// Rendering and checking the checkout's model happens on every `up` and `--dry-run` before
// anything runs; it must stay a small fraction of the stack's start-up.
func BenchmarkLoadAndRender(b *testing.B) {
	checkout := ocebed.Checkout(b, fixtureCommit)
	state := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		m, err := Load(context.Background(), LoadOptions{Checkout: checkout, Project: "occ-bench", StateDir: state})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Render(); err != nil {
			b.Fatal(err)
		}
	}
}

// A snapshot someone else could have changed is never handed to the plugin: down would act on
// whatever it names.
func TestRunnerRefusesSharedSnapshot(t *testing.T) {
	b := newModelBed(t)
	m, err := b.load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(snap.Path, 0o666); err != nil {
		t.Fatal(err)
	}
	r := Runner{Plugin: Plugin{Path: "/nonexistent/docker-compose"}, Endpoint: "unix:///nonexistent.sock", Snapshot: snap}
	if err := r.Down(context.Background(), DownOptions{Volumes: true}); err == nil || !strings.Contains(err.Error(), "must be a private regular file") {
		t.Fatalf("got %v", err)
	}
}

// With the private Agent Gateway route beside the cluster, the controller and worker-kubernetes
// name the route's key and CA by their mounted paths and mount the state's two files read-only;
// Compose files that point a variable elsewhere or mount something at a target are refused
// naming the service, the key and the value.
func TestLoadAddsRouting(t *testing.T) {
	b := newModelBed(t)
	load := func(files []string) (*Model, error) {
		return Load(context.Background(), LoadOptions{Checkout: b.checkout, Project: "occ-model-test", StateDir: b.state, User: UserOptions{Files: files}, Routing: true})
	}
	m, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range APIServices {
		svc := m.Project.Services[name]
		for k, want := range map[string]string{EnvGatewayKey: "/run/openclaw-development/gateway-api-key", EnvNodeExtraCAs: "/run/openclaw-development/gateway-ca.crt"} {
			if v := svc.Environment[k]; v == nil || *v != want {
				t.Errorf("%s: %s = %v, want %s", name, k, v, want)
			}
		}
		for _, f := range []string{GatewayKeyName, GatewayCAName} {
			found := false
			for _, v := range svc.Volumes {
				if v.Target == RoutingMountDir+"/"+f {
					found = v.Type == "bind" && v.Source == filepath.Join(b.state, f) && v.ReadOnly && v.Bind != nil && v.Bind.SELinux == "z"
				}
			}
			if !found {
				t.Errorf("%s does not mount %s read-only from the state: %+v", name, f, svc.Volumes)
			}
		}
	}
	if v := m.Project.Services[ServicePostgres].Environment[EnvGatewayKey]; v != nil {
		t.Errorf("postgres is given the route's key: %v", *v)
	}
	// Without the route nothing of it is added.
	plain, err := b.load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := plain.Project.Services[ServiceController].Environment[EnvGatewayKey]; v != nil {
		t.Errorf("the controller names a key without the route: %v", *v)
	}

	_, err = load([]string{b.override("routing.yaml", "services:\n  controller:\n    environment:\n      NODE_EXTRA_CA_CERTS: /etc/ssl/mine.pem\n  worker-kubernetes:\n    volumes:\n      - ./key:/run/openclaw-development/gateway-api-key:ro\n")})
	var pe *ProjectError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *ProjectError", err)
	}
	for _, want := range []string{`service controller: environment.NODE_EXTRA_CA_CERTS = "/etc/ssl/mine.pem": must be /run/openclaw-development/gateway-ca.crt`,
		"service worker-kubernetes: volumes[", ":/run/openclaw-development/gateway-api-key\": mounts /run/openclaw-development/gateway-api-key", "remove that mount"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q:\n%v", want, err)
		}
	}
}
