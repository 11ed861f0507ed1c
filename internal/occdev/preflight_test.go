package occdev_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/occdevtest"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// A developer runs `occ dev up` while their cluster is stopped: up says the cluster is not
// reachable before it downloads anything (no archive or manifest request, no cache directory)
// and before it claims the state directory. With the cluster running, the same settings do
// download the archive, so the counter is known to count.
func TestUnreachableClusterFailsBeforeAnyDownload(t *testing.T) {
	b := newBed(t)
	pinFile, archiveDownloads := b.ServeArchive()
	dead := b.CopyKubeconfig()
	occdevtest.PointKubeconfig(t, dead, occdevtest.DeadServer(t))

	opts := b.Options()
	opts.PinFile, opts.ArchiveFile, opts.Kubeconfig = pinFile, "", dead
	_, err := occdev.Up(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "Check the settings and the cluster") || !strings.Contains(err.Error(), "is not reachable") {
		t.Fatalf("up against a stopped cluster: %v; want the preflight's reachability error", err)
	}
	if n := archiveDownloads.Get() + b.Downloads.Get(); n != 0 {
		t.Errorf("%d download(s) before the cluster was found unreachable", n)
	}
	for _, p := range []string{b.CacheDir, b.StateDir} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after a preflight failure", p)
		}
	}

	opts.Kubeconfig = b.Kubeconfig
	if _, err := occdev.Up(context.Background(), opts); err != nil {
		t.Fatalf("up with the cluster running: %v", err)
	}
	if archiveDownloads.Get() != 1 {
		t.Errorf("the archive was downloaded %d times with the cluster running, want 1", archiveDownloads.Get())
	}
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
}

// A developer runs `occ dev up` (the k3d default) without starting Docker: the preflight says
// no engine runs at the located socket and what to start, before any download and before the
// state directory is claimed.
func TestMissingDockerEngineFailsBeforeAnyDownload(t *testing.T) {
	b := newBed(t)
	pinFile, archiveDownloads := b.ServeArchive()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	opts := b.Options()
	opts.ClusterProvider, opts.Kubeconfig, opts.Namespace = occdev.ProviderK3d, "", ""
	opts.PinFile, opts.ArchiveFile = pinFile, ""
	opts.Docker = locate.Env{Getenv: func(k string) string {
		if k == locate.EnvDockerHost {
			return "unix://" + sock
		}
		return ""
	}, Home: t.TempDir()}
	_, err := occdev.Up(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "Check the settings and the Docker engine") ||
		!strings.Contains(err.Error(), "Docker at unix://"+sock+" (from DOCKER_HOST)") || !strings.Contains(err.Error(), "start the engine DOCKER_HOST names") ||
		!strings.Contains(err.Error(), "Podman at ") {
		t.Fatalf("up without Docker: %v; want the preflight to say which engine is missing and what to start", err)
	}
	if n := archiveDownloads.Get() + b.Downloads.Get(); n != 0 {
		t.Errorf("%d download(s) before the engine was found missing", n)
	}
	for _, p := range []string{b.CacheDir, b.StateDir} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after a preflight failure", p)
		}
	}
}

// The developer stops their cluster after `up`: status says every recorded object is unknown,
// with the cause, and never that it is missing; once the cluster is back, status is present
// again and down removes everything.
func TestStatusOfUnreachableClusterIsUnknownWithCause(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	kubeconfig := b.CopyKubeconfig()
	live, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	opts := b.Options()
	opts.Kubeconfig = kubeconfig
	if _, err := occdev.Up(ctx, opts); err != nil {
		t.Fatalf("up: %v", err)
	}
	occdevtest.PointKubeconfig(t, kubeconfig, occdevtest.DeadServer(t))

	st, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: b.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	if st.Reachable || !strings.Contains(st.Problem, "connection refused") {
		t.Errorf("reachable %v, problem %q; want not reachable with the refused connection as the cause", st.Reachable, st.Problem)
	}
	if len(st.Objects) == 0 || st.Unknown() != len(st.Objects) {
		t.Fatalf("%d of %d objects unknown; want all", st.Unknown(), len(st.Objects))
	}
	for _, o := range st.Objects {
		if o.State != state.Unknown || !strings.Contains(o.Detail, "connection refused") {
			t.Errorf("%s %s: %s (%q); want unknown with the cause", o.Kind, o.Name, o.State, o.Detail)
		}
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err == nil || !strings.Contains(err.Error(), "preserving "+b.StateDir) {
		t.Fatalf("down against the stopped cluster: %v; want the state kept", err)
	}

	if err := os.WriteFile(kubeconfig, live, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err = occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: b.StateDir})
	if err != nil || !st.Reachable || st.Unknown() != 0 {
		t.Fatalf("status with the cluster back: %+v, %v", st, err)
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
}

// blockingTransport holds every request until its context ends, like a download from a slow
// mirror, and says when one has started.
type blockingTransport struct {
	once    sync.Once
	started chan struct{}
}

func (b *blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b.once.Do(func() { close(b.started) })
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// The cluster lane fails while the artifacts lane is still downloading the Agent Sandbox
// manifest: the download is cancelled (its line says so), the rollback waits for it and then
// removes everything, and the error is the cluster lane's failure.
func TestClusterLaneFailureCancelsTheDownload(t *testing.T) {
	b := newBed(t)
	tr := &blockingTransport{started: make(chan struct{})}
	var mu sync.Mutex
	var ends []progress.Event
	opts := b.Options()
	opts.HTTPClient = &http.Client{Transport: tr}
	opts.Progress = func(e progress.Event) {
		if e.Kind == progress.End {
			mu.Lock()
			ends = append(ends, e)
			mu.Unlock()
		}
	}
	opts.Seams().AfterStep = func(name string) error {
		if strings.HasPrefix(name, "Connect to the cluster") {
			select {
			case <-tr.started: // the manifest download is under way
				return errors.New("injected cluster failure")
			case <-time.After(30 * time.Second):
				return errors.New("the manifest download never started")
			}
		}
		return nil
	}
	_, err := occdev.Up(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "injected cluster failure") || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("up: %v; want the cluster lane's failure, rolled back", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("the error reports the cancellation it caused, not only the failure: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var fetch *progress.Event
	for i := range ends {
		if ends[i].Step == "Fetch and verify the Agent Sandbox manifest" {
			fetch = &ends[i]
		}
	}
	if fetch == nil || fetch.Lane != "artifacts" || !errors.Is(fetch.Err, context.Canceled) {
		t.Fatalf("the download's end event: %+v; want it cancelled in the artifacts lane", fetch)
	}
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory kept: %v", err)
	}
	assertNoLabelledObjects(t, b)
}
