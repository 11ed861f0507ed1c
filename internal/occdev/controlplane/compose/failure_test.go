package compose

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// A checkout whose migration fails (here: the migrator URL is not a PostgreSQL URL): `up` stops
// at the data stage with "migrate exited with 1" and the job's own last log lines, bootstrap never
// runs, and the recorded snapshot still removes everything.
func TestStartDataReportsFailedMigration(t *testing.T) {
	b := newBed(t)
	over := filepath.Join(b.checkout, "broken-migrate.yaml")
	if err := os.WriteFile(over, []byte("services:\n  migrate:\n    environment:\n      OCC_MIGRATION_DATABASE_URL: mysql://occ_migrator:occ-migrator-local@postgres/openclaw_enterprise\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, snap := b.builtSnapshot(UserOptions{Files: []string{over}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, s := b.runner(snap), b.stack()
	err := StartData(ctx, StartOptions{Runner: r, Stack: s})
	t.Logf("the error the user sees:\n%v", err)
	var je *JobError
	if !errors.As(err, &je) || je.Service != ServiceMigrate || je.ExitCode != 1 {
		t.Fatalf("got %v, want migrate's JobError with exit 1", err)
	}
	for _, want := range []string{"migrate exited with 1", "MIGRATION_FAILED", "OCC_MIGRATION_DATABASE_URL must contain the dedicated migrator credential."} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// The URL's password is scrubbed even from the plugin's own messages.
	if strings.Contains(err.Error(), "occ-migrator-local") {
		t.Errorf("the error shows a database password:\n%v", err)
	}
	states, err := s.Status(ctx, ServiceBootstrap)
	if err != nil {
		t.Fatal(err)
	}
	if st := states[0]; st.State == "running" || (st.State == "exited" && st.ExitCode == 0) {
		t.Errorf("bootstrap ran after a failed migration: %s", st)
	}
	if err := Remove(ctx, RemoveOptions{Runner: r, Engine: b.verbs(), Names: m.Names()}); err != nil {
		t.Fatal(err)
	}
}

// On a Docker host without the buildx plugin (the bed has none, whatever the engine's version)
// Compose falls back to the classic builder, which refuses BuildKit-only syntax such as the
// secret mount of OCE's real dependencies stage (the fixture's too): the data stage of `compose
// up --build` fails with the builder's own reason, and nothing of the project runs. This is why
// occ builds through the engine's BuildKit itself.
func TestStartDataShowsBuilderRefusal(t *testing.T) {
	b := newBed(t)
	if !strings.Contains(readFile(t, filepath.Join(b.checkout, "Dockerfile")), "RUN --mount=type=secret,id=npmrc") {
		t.Fatal("the fixture Dockerfile lost its secret mount; update the test")
	}
	m := b.mustLoad(UserOptions{})
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, s := b.runner(snap), b.stack()
	err = StartData(ctx, StartOptions{Runner: r, Stack: s, Build: true})
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "the --mount option requires BuildKit") {
		t.Fatalf("got %v, want the classic builder's refusal", err)
	}
	states, err := s.Status(ctx, DataServices...)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range states {
		if st.State != "missing" {
			t.Errorf("%s exists after a failed build: %s", st.Service, st)
		}
	}
	if err := Remove(ctx, RemoveOptions{Runner: r, Engine: b.verbs(), Names: m.Names()}); err != nil {
		t.Fatal(err)
	}
}

// A worker that never observes a healthy database (its credentials are wrong) never passes its
// readiness probe: the readiness wait ends at its deadline with the reference's message and the
// probe's own explanation, although the API itself answers.
func TestReadinessWaitsForTheWorker(t *testing.T) {
	b := newBed(t)
	over := filepath.Join(b.checkout, "broken-worker.yaml")
	if err := os.WriteFile(over, []byte("services:\n  worker-kubernetes:\n    environment:\n      OCC_DATABASE_URL: postgresql://occ_app:wrong-password@postgres:5432/openclaw_enterprise\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, snap := b.builtSnapshot(UserOptions{Files: []string{over}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, s := b.runner(snap), b.stack()
	if err := StartData(ctx, StartOptions{Runner: r, Stack: s}); err != nil {
		t.Fatal(err)
	}
	b.writeAPIInputs(installationYAML, "apiVersion: v1\nkind: Config\n")
	if err := StartAPI(ctx, StartOptions{Runner: r, Stack: s}); err != nil {
		t.Fatal(err)
	}
	if err := controlplane.CheckSession(ctx, controlplane.NewAPIClient(3*time.Second), m.APIURL); err != nil {
		t.Fatalf("the API itself should answer: %v", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 6*time.Second)
	defer wcancel()
	err := controlplane.WaitReady(wctx, controlplane.ReadinessOptions{APIURL: m.APIURL, Checks: []controlplane.ReadinessCheck{s.ReadinessCheck()}})
	var te *controlplane.ReadinessTimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a readiness timeout", err)
	}
	for _, want := range []string{"development readiness: context deadline exceeded", "worker-kubernetes readiness probe exited with 1", "The worker has not reported a recent healthy database observation."} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// Leftovers of an earlier stack (a volume someone created by hand with the project's name, or
// a network carrying the project's label) are refused before anything is created, by name.
func TestEnsureAbsentRefusesExistingResources(t *testing.T) {
	b := newBed(t)
	m := b.mustLoad(UserOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.EnsureAbsent(ctx, b.verbs()); err != nil {
		t.Fatalf("a fresh project: %v", err)
	}
	vol := b.settings.Project + "_occ_bootstrap_data"
	if _, err := b.engine.API.VolumeCreate(ctx, volume.CreateOptions{Name: vol}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.API.VolumeRemove(context.Background(), vol, true) })
	err := m.EnsureAbsent(ctx, b.verbs())
	var ee *ExistsError
	if !errors.As(err, &ee) || strings.Join(ee.Resources.Volumes, ",") != vol || !strings.Contains(err.Error(), "Compose project already has resources: "+b.settings.Project+" (volume "+vol+")") {
		t.Fatalf("an unlabelled volume of the project: %v", err)
	}
	if err := b.engine.API.VolumeRemove(ctx, vol, true); err != nil {
		t.Fatal(err)
	}
	netName := b.settings.Project + "_leftover"
	created, err := b.engine.API.NetworkCreate(ctx, netName, network.CreateOptions{Labels: map[string]string{LabelProject: b.settings.Project}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.API.NetworkRemove(context.Background(), created.ID) })
	err = m.EnsureAbsent(ctx, b.verbs())
	if !errors.As(err, &ee) || strings.Join(ee.Resources.Networks, ",") != netName {
		t.Fatalf("a labelled network of the project: %v", err)
	}
	if err := b.engine.API.NetworkRemove(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	// An unlabelled container with the name Compose would give postgres.
	img := ocebed.EnsureImages(t, b.engine).Postgres
	cname := b.settings.Project + "-postgres-1"
	c, err := b.engine.API.ContainerCreate(ctx, &container.Config{Image: img.Tag}, nil, nil, nil, cname)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.engine.API.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
	})
	err = m.EnsureAbsent(ctx, b.verbs())
	if !errors.As(err, &ee) || strings.Join(ee.Resources.Containers, ",") != cname {
		t.Fatalf("a container with a Compose name of the project: %v", err)
	}
}

// A failing plugin command shows what the plugin said, scrubbed of the secrets the runner was
// given, never only an exit status.
func TestRunnerShowsScrubbedStderr(t *testing.T) {
	b := newBed(t)
	m := b.mustLoad(UserOptions{})
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	r := b.runner(snap)
	r.Redact = []string{"canary-5e5f1d7c"}
	err = r.Up(context.Background(), UpOptions{Services: []string{"canary-5e5f1d7c"}})
	var ce *CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CommandError", err)
	}
	if !strings.Contains(ce.Stderr, "no such service: [redacted]") || strings.Contains(err.Error(), "canary-5e5f1d7c") {
		t.Fatalf("stderr not shown or not scrubbed:\n%v", err)
	}
}

// No Compose plugin installed: the error lists every directory searched and how to install it.
// A plugin older than occ's snapshot format is refused with its version.
func TestFindPlugin(t *testing.T) {
	cfg := t.TempDir()
	system := []string{filepath.Join(t.TempDir(), "system-plugins")}
	_, err := FindPlugin(context.Background(), FindPluginOptions{DockerConfig: cfg, SystemDirs: system})
	var nf *PluginNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("got %v, want *PluginNotFoundError", err)
	}
	for _, want := range []string{filepath.Join(cfg, "cli-plugins"), system[0], "Install Docker Compose v2.20.0 or newer", "docker-compose-plugin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// An old plugin, found in an extra directory named by the CLI config: the handshake is the
	// real metadata request, answered by a script.
	extra := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"cliPluginsExtraDirs": ["`+extra+`"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	old := "#!/bin/sh\n[ \"$1\" = docker-cli-plugin-metadata ] && echo '{\"SchemaVersion\":\"0.1.0\",\"Vendor\":\"Docker Inc.\",\"Version\":\"v2.17.3\"}'\n"
	if err := os.WriteFile(filepath.Join(extra, PluginName), []byte(old), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = FindPlugin(context.Background(), FindPluginOptions{DockerConfig: cfg, SystemDirs: system})
	if err == nil || !strings.Contains(err.Error(), "is version v2.17.3; occ needs v2.20.0 or newer") {
		t.Fatalf("an old plugin: %v", err)
	}
	// The real plugin installed by scripts/testcompose is found where the Docker CLI looks.
	real, err := FindPlugin(context.Background(), FindPluginOptions{DockerConfig: os.Getenv("DOCKER_CONFIG")})
	if err != nil {
		t.Fatalf("%v\n(scripts/testcompose installs the plugin; make test runs it)", err)
	}
	if v, ok := parseVersion(real.Version); !ok || v.less(MinPluginVersion) {
		t.Fatalf("real plugin %+v", real)
	}
}

// Ctrl-C while occ asks the plugin for its metadata: the error is the cancellation (which the
// step reports as an interruption), not the plugin's "signal: killed".
func TestFindPluginInterrupted(t *testing.T) {
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "cli-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A plugin that never answers; it says it started through a FIFO, so the cancellation
	// meets it running.
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PluginName), []byte("#!/bin/sh\necho started > "+fifo+"\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := FindPlugin(ctx, FindPluginOptions{DockerConfig: cfg, SystemDirs: []string{}})
		errc <- err
	}()
	started, err := os.ReadFile(fifo)
	if err != nil || string(started) != "started\n" {
		t.Fatalf("the plugin did not start: %q %v", started, err)
	}
	cancel()
	err = <-errc
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("got %v, want the cancellation", err)
	}
}
