package compose

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// An engineer's first `occ dev up` from the OCE checkout, and the `occ dev down` after it: the
// data services start from the snapshot with images Compose builds from the checkout, migrate
// and bootstrap complete, the controller and the worker start without re-running the jobs and
// reach the cluster through the mounted kubeconfig, the API and the worker become ready, the
// key is copied from the bootstrap volume, verified and written privately; a doctored key is
// refused and never written; the key appears nowhere else; down leaves nothing.
func TestStackLifecycle(t *testing.T) {
	b := newBed(t)
	m := b.mustLoad(UserOptions{Files: []string{writeCheckoutFile(t, b.checkout, "build-network.yaml", buildNetworkNone)}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	timed := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	}

	var snap Snapshot
	timed("ensure absent + BuildKit build + snapshot", func() error {
		if err := m.EnsureAbsent(ctx, b.verbs()); err != nil {
			return err
		}
		builds, err := m.UseBuiltImages()
		if err != nil {
			return err
		}
		if _, err := BuildImages(ctx, builds, BuildImagesOptions{Engine: b.verbs()}); err != nil {
			return err
		}
		snap, err = m.WriteSnapshot(b.state)
		return err
	})
	r, s := b.runner(snap), b.stack()
	timed("compose up postgres migrate bootstrap + wait", func() error {
		return StartData(ctx, StartOptions{Runner: r, Stack: s})
	})
	// The images were built from the checkout: the container holds the checkout's package.json.
	if got, want := fileFromService(t, s, ServiceMigrate, "/app/package.json"), readFile(t, filepath.Join(b.checkout, "package.json")); got != want {
		t.Fatalf("migrate's image holds package.json %q, the checkout %q", got, want)
	}
	bootstrapStarted := startedAt(t, b, s, ServiceBootstrap)

	kube := newKubeAPIStandin(t, m.Network.Gateway)
	b.writeAPIInputs(installationYAML, kube.kubeconfig)
	timed("compose up --no-deps controller worker-kubernetes", func() error {
		return StartAPI(ctx, StartOptions{Runner: r, Stack: s})
	})
	if again := startedAt(t, b, s, ServiceBootstrap); !again.Equal(bootstrapStarted) {
		t.Fatalf("bootstrap ran again (started %v, then %v); the API stage must not restart the jobs", bootstrapStarted, again)
	}
	timed("readiness (session 2xx + worker exec)", func() error {
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		defer rcancel()
		return controlplane.WaitReady(rctx, controlplane.ReadinessOptions{APIURL: m.APIURL, Checks: []controlplane.ReadinessCheck{s.ReadinessCheck()}})
	})
	assertKubernetesReached(ctx, t, s, kube)

	dest, err := controlplane.ResolveKeyDestination("", b.state)
	if err != nil {
		t.Fatal(err)
	}
	var installed controlplane.InstalledKey
	timed("copy and verify the bootstrap key", func() error {
		var err error
		installed, err = controlplane.InstallServiceKey(ctx, controlplane.InstallKeyOptions{StateDir: b.state, Destination: dest, APIURL: m.APIURL, Read: s.BootstrapKeySource()})
		return err
	})
	if fi, err := os.Stat(installed.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v, mode %v; want 0600", installed.Path, err, fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(b.state, controlplane.KeyCopyName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the temporary key copy is still there (%v)", err)
	}
	secret := keySecret(t, installed.Path)
	if !strings.HasPrefix(installed.InstallationID, "ins_") {
		t.Fatalf("Installation ID %q", installed.InstallationID)
	}

	// A key whose Installation ID is not the live Installation's (bootstrap output of another
	// stack) is refused, and the user's key file is never created.
	doctored := strings.Replace(readFile(t, installed.Path), installed.InstallationID, "ins_00000000-0000-4000-8000-000000000000", 1)
	putBootstrapKey(t, b, s, doctored)
	userDir := privateDir(t)
	userKey := filepath.Join(userDir, "key.json")
	wrongDest, err := controlplane.ResolveKeyDestination(userKey, b.state)
	if err != nil {
		t.Fatal(err)
	}
	_, err = controlplane.InstallServiceKey(ctx, controlplane.InstallKeyOptions{StateDir: b.state, Destination: wrongDest, APIURL: m.APIURL, Read: s.BootstrapKeySource()})
	if err == nil || !strings.Contains(err.Error(), "Installation ID does not match the bootstrap service key") {
		t.Fatalf("doctored key: got %v, want the Installation ID mismatch", err)
	}
	if _, statErr := os.Stat(userKey); !errors.Is(statErr, fs.ErrNotExist) {
		t.Fatalf("a refused key was written to %s", userKey)
	}
	if _, statErr := os.Stat(filepath.Join(b.state, controlplane.KeyCopyName)); !errors.Is(statErr, fs.ErrNotExist) {
		t.Fatal("the temporary copy of a refused key was left behind")
	}

	// The canary: the real secret is in the key file and nowhere else occ wrote or said.
	var said []string
	said = append(said, err.Error(), fmt.Sprint(installed))
	assertNowhere(t, secret, b.state, installed.Path, said)

	states, err := s.Status(ctx, RequiredServices...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ServicePostgres: "running (healthy)", ServiceMigrate: "exited with code 0", ServiceBootstrap: "exited with code 0", ServiceController: "running (healthy)", ServiceWorker: "running"}
	for _, st := range states {
		if st.String() != want[st.Service] {
			t.Errorf("status of %s: %q, want %q", st.Service, st, want[st.Service])
		}
	}

	timed("compose stop controller worker-kubernetes", func() error { return StopReconcilers(ctx, r) })
	timed("compose down --volumes --rmi local + verify", func() error {
		return Remove(ctx, RemoveOptions{Runner: r, Engine: b.verbs(), Names: m.Names(), Images: true})
	})
	// The image occ built (named by the snapshot's image key, so not Compose's to remove) stays
	// for the next run's build cache; nothing else of the project does.
	imgs, err := b.engine.API.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", b.settings.Project+"-*"))})
	if err != nil || len(imgs) != 1 || len(imgs[0].RepoTags) != 1 || imgs[0].RepoTags[0] != b.settings.Project+"-development:latest" {
		t.Errorf("images of the project after down: %v %v; want only the one occ built", imgs, err)
	}
	states, err = s.Status(ctx, RequiredServices...)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range states {
		if st.State != "missing" {
			t.Errorf("after down %s is %s", st.Service, st)
		}
	}
	// Down is safe to repeat.
	if err := Remove(ctx, RemoveOptions{Runner: r, Engine: b.verbs(), Names: m.Names()}); err != nil {
		t.Fatalf("second down: %v", err)
	}
}

// installationYAML is the part of the Installation the controller stand-in reads: the compute
// driver's kubeconfig authentication, as the Compose profile writes it.
const installationYAML = `drivers:
  compute:
    id: compute-kubernetes
    configuration:
      authentication:
        mode: kubeconfig
        kubeconfigPath: /run/openclaw-development/kubeconfig
        context: standin
`

// kubeAPIStandin is an HTTPS endpoint answering /version for one bearer token, listening on the
// development network's gateway address so the containers reach it across the bridge.
type kubeAPIStandin struct {
	server     *httptest.Server
	kubeconfig string
	// called is closed by the first authenticated /version request.
	called chan struct{}
	once   sync.Once
}

func newKubeAPIStandin(t *testing.T, gateway string) *kubeAPIStandin {
	t.Helper()
	k := &kubeAPIStandin{called: make(chan struct{})}
	const token = "standin-token-for-the-container-kubeconfig"
	k.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/version" {
			k.once.Do(func() { close(k.called) })
			_, _ = io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2-standin"}`)
			return
		}
		http.NotFound(w, r)
	}))
	ln, err := net.Listen("tcp", net.JoinHostPort(gateway, "0"))
	if err != nil {
		t.Fatalf("listen on the development gateway %s: %v", gateway, err)
	}
	k.server.Listener = ln
	k.server.StartTLS()
	t.Cleanup(k.server.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.server.Certificate().Raw})
	// The test certificate names example.com, as the real container kubeconfig names the k3d
	// load balancer with tls-server-name while dialling another address.
	k.kubeconfig = fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster:
    server: %s
    tls-server-name: example.com
    certificate-authority-data: %s
users:
- name: standin
  user:
    token: %s
contexts:
- name: standin
  context: {cluster: standin, user: standin}
current-context: standin
`, k.server.URL, base64.StdEncoding.EncodeToString(ca), token)
	return k
}

// assertKubernetesReached waits for the stand-in API server to be called with the mounted
// kubeconfig's token, then for the controller to log that it reached it.
func assertKubernetesReached(ctx context.Context, t *testing.T, s Stack, k *kubeAPIStandin) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case <-k.called:
	case <-ctx.Done():
		t.Fatal("the controller never called the Kubernetes API through its mounted kubeconfig")
	}
	id, err := s.oneContainer(ctx, ServiceController)
	if err != nil || id == "" {
		t.Fatalf("controller container: %q, %v", id, err)
	}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() {
		pw.CloseWithError(s.Engine.Logs(lctx, id, engine.LogsRequest{Follow: true, Tail: -1}, pw, io.Discard))
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var ev struct {
			Event      string `json:"event"`
			Reachable  bool   `json:"reachable"`
			Server     string `json:"server"`
			GitVersion string `json:"gitVersion"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "standin.kubernetes" && ev.Reachable {
			if ev.Server != k.server.URL || ev.GitVersion != "v1.37.2-standin" {
				t.Fatalf("the controller reached %s (%s), want %s", ev.Server, ev.GitVersion, k.server.URL)
			}
			return
		}
	}
	t.Fatalf("the controller never logged reaching the Kubernetes API: %v", sc.Err())
}

func fileFromService(t *testing.T, s Stack, service, path string) string {
	t.Helper()
	id, err := s.oneContainer(context.Background(), service)
	if err != nil || id == "" {
		t.Fatalf("container of %s: %q, %v", service, id, err)
	}
	rc, err := s.Engine.CopyFrom(context.Background(), id, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func putBootstrapKey(t *testing.T, b *bed, s Stack, content string) {
	t.Helper()
	id, err := s.oneContainer(context.Background(), ServiceBootstrap)
	if err != nil || id == "" {
		t.Fatalf("bootstrap container: %q, %v", id, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: filepath.Base(controlplane.BootstrapKeyPath), Mode: 0o600, Size: int64(len(content)), Uid: 1000, Gid: 1000})
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	if err := b.engine.API.CopyToContainer(context.Background(), id, filepath.Dir(controlplane.BootstrapKeyPath), &buf, container.CopyToContainerOptions{}); err != nil {
		t.Fatal(err)
	}
}

func startedAt(t *testing.T, b *bed, s Stack, service string) time.Time {
	t.Helper()
	id, err := s.oneContainer(context.Background(), service)
	if err != nil || id == "" {
		t.Fatalf("container of %s: %q, %v", service, id, err)
	}
	c, err := b.engine.API.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, c.State.StartedAt)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func keySecret(t *testing.T, path string) string {
	t.Helper()
	var doc struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(readFile(t, path)), &doc); err != nil || len(doc.Data.Key) < 16 {
		t.Fatalf("key file %s: %v (key of %d bytes)", path, err, len(doc.Data.Key))
	}
	return doc.Data.Key
}

// assertNowhere fails when secret appears in any file under dir other than keyFile, or in any
// of the texts.
func assertNowhere(t *testing.T, secret, dir, keyFile string, texts []string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == keyFile {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("the service key appears in %s", p)
		}
		return nil
	})
	for _, s := range texts {
		if strings.Contains(s, secret) {
			t.Errorf("the service key appears in %q", s)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
