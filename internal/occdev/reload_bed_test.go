package occdev_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/syncbuf"
)

// serverScript is the controller's source file in the fixture checkout.
const serverScript = "apps/controller/src/server.mjs"

// composeReloadSteps are the steps of a Compose profile's reload, in order.
var composeReloadSteps = []string{
	"Check the recorded environment",
	"Rebuild the control-plane images from the checkout",
	"Import the rebuilt images into the cluster",
	"Verify the rebuilt images in the node",
	"Point the Installation at the rebuilt Agent runtime",
	"Recreate the services of the rebuilt images",
	"Wait for the API and the worker to be ready",
	"Record the rebuilt images and the checkout's commit",
}

// An OCE engineer edits the controller's source in the checkout and runs `occ dev reload`: only
// the development image changes, the controller and worker-kubernetes are recreated from it and
// the controller now answers from the new source; a reload with nothing changed recreates
// nothing; a reload interrupted after any of its steps leaves a working environment on the old
// or the new build and a state the next reload finishes, and so does the built binary killed
// (SIGKILL) or stopped with Ctrl-C after chosen steps; unknown services, a moved checkout and
// a missing environment are refused saying what to do; `down` then leaves nothing.
func TestComposeReload(t *testing.T) {
	startBuild()
	b := newComposeBed(t)
	ctx := context.Background()
	r := b.run(t)
	downAtEnd(t, r.opts.StateDir)
	volumesBefore := b.allVolumes(t)
	log := r.opts.Log.(*syncbuf.Buffer)
	sum, err := occdev.Up(ctx, r.opts)
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, log)
	}
	dir, name := r.opts.StateDir, r.opts.K3d().ClusterName
	vols := b.volumesOf(t, name)
	apiURL := sum.OCE.APIURL
	script := filepath.Join(r.checkout, serverScript)
	if got, want := controllerSource(t, apiURL), fileDigest(t, script); got != want {
		t.Fatalf("after up the controller runs source %s, the checkout has %s", got, want)
	}
	before := mustState(t, dir)

	// A reload with nothing changed: every image as recorded, nothing recreated.
	res, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
	if err != nil {
		t.Fatalf("reload without a change: %v", err)
	}
	if len(res.Rolled) != 0 || slices.ContainsFunc(res.Images, func(i reload.Image) bool { return i.Changed }) {
		t.Errorf("a reload without a change changed something: %+v", res)
	}

	// The engineer's edit: the controller's source changes, and with it the development image.
	editSource(t, script, "first edit")
	res, err = occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got, want := controllerSource(t, apiURL), fileDigest(t, script); got != want {
		t.Errorf("after the reload the controller runs source %s, the checkout has %s", got, want)
	}
	if !slices.Equal(res.Rolled, compose.APIServices) {
		t.Errorf("recreated %q, want exactly %q", res.Rolled, compose.APIServices)
	}
	for _, img := range res.Images {
		if img.Changed != (img.Role == "development") {
			t.Errorf("image %s changed=%v: only the development image runs the edited file", img.Role, img.Changed)
		}
	}
	after := mustState(t, dir)
	dev := recordedRole(after, "development")
	if dev.ID == recordedRole(before, "development").ID || dev.ID != imageOf(res, "development").Current {
		t.Errorf("the state records development image %s; before %s, built %s", dev.ID, recordedRole(before, "development").ID, imageOf(res, "development").Current)
	}
	assertComposeServices(t, b, r)

	// An edited Compose file, or a .env that appeared in the checkout, is refused before any
	// build: reload repeats the recorded model, which they no longer match. Put back, the
	// reload goes on.
	for _, edit := range []struct{ file, content string }{
		{"compose.yaml", ""}, {".env", "OPENCLAW_DEV_PORT=3999\n"},
	} {
		path := filepath.Join(r.checkout, edit.file)
		orig, origErr := os.ReadFile(path)
		content := edit.content
		if origErr == nil {
			content = string(orig) + "# an edit after up\n"
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		stateBefore, _ := os.ReadFile(filepath.Join(dir, "state.json"))
		_, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
		if err == nil || !strings.Contains(err.Error(), "its Compose files changed since occ dev up ("+path+")") || !strings.Contains(err.Error(), "occ dev down --state-dir "+dir) {
			t.Errorf("reload after editing %s: %v", edit.file, err)
		}
		if stateAfter, _ := os.ReadFile(filepath.Join(dir, "state.json")); string(stateAfter) != string(stateBefore) {
			t.Errorf("the refused reload (%s edited) changed the state", edit.file)
		}
		if origErr == nil {
			err = os.WriteFile(path, orig, 0o644)
		} else {
			err = os.Remove(path)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}}); err != nil {
		t.Fatalf("reload with the Compose files put back: %v", err)
	}

	// Interrupted after each step, the environment keeps working on the old or the new build,
	// and the next reload finishes it.
	for i, step := range composeReloadSteps {
		t.Run(fmt.Sprintf("interrupted after step %d %s", i+1, step), func(t *testing.T) {
			old := controllerSource(t, apiURL)
			editSource(t, script, "edit before an interrupted "+step)
			// An edit of the Agent runtime too: the import, the verification and the Installation's
			// rewrite have work to be interrupted after.
			oldRuntime := recordedRole(mustState(t, dir), "runtime").InCluster
			editRuntime(t, r.checkout)
			_, err := occdev.Reload(ctx, reloadFailingAfter(dir, step))
			if err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("reload did not fail after %s: %v", step, err)
			}
			if i > 0 && !strings.Contains(err.Error(), "occ dev reload --state-dir "+dir) {
				t.Errorf("the error does not name the reload that finishes it:\n%v", err)
			}
			if got := waitControllerSource(t, apiURL); got != old && got != fileDigest(t, script) {
				t.Errorf("after the interrupted reload the controller runs source %s: neither the old %s nor the new", got, old)
			}
			if _, err := state.Read(dir); err != nil {
				t.Fatalf("the interrupted reload left a state that cannot be read: %v", err)
			}
			if _, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}}); err != nil {
				t.Fatalf("the next reload: %v", err)
			}
			if rt := recordedRole(mustState(t, dir), "runtime").InCluster; rt == oldRuntime {
				t.Errorf("the edited Agent runtime was not rebuilt into a new image: still %s", rt)
			}
			if got, want := controllerSource(t, apiURL), fileDigest(t, script); got != want {
				t.Errorf("after the next reload the controller runs source %s, the checkout has %s", got, want)
			}
			assertComposeServices(t, b, r)
			assertRuntimeCurrent(t, dir)
		})
	}

	// Killed (SIGKILL) or stopped with Ctrl-C (SIGINT) after a step, the built `occ dev reload`
	// leaves the environment on its old or its new images, and the next one finishes it.
	sig := reloadSignalEnv{
		profile: "Compose", bin: buildOCC(t), dir: dir, workDir: filepath.Join(r.checkout, "apps", "controller"), env: b.cliEnv(t, r),
		edit: func(t *testing.T) {
			editSource(t, script, "edit before a signalled reload")
			editRuntime(t, r.checkout)
		},
		running: func(t *testing.T) map[string]string {
			out := map[string]string{"the controller's source": waitControllerSource(t, apiURL), "the Installation's Agent runtime": installationRuntime(t, dir)}
			images, err := compose.Stack{Project: r.settings.Project, Engine: b.engine.Verbs()}.ServiceImages(ctx, compose.APIServices...)
			if err != nil {
				t.Fatal(err)
			}
			for _, svc := range compose.APIServices {
				out["service "+svc] = images[svc]
			}
			return out
		},
		statusWants: []string{"Compose:       project " + r.settings.Project},
		assertReloaded: func(t *testing.T) {
			if got, want := controllerSource(t, apiURL), fileDigest(t, script); got != want {
				t.Errorf("the controller runs source %s, the checkout has %s", got, want)
			}
			running, err := compose.Stack{Project: r.settings.Project, Engine: b.engine.Verbs()}.ServiceImages(ctx, compose.APIServices...)
			if err != nil {
				t.Fatal(err)
			}
			dev := recordedRole(mustState(t, dir), "development").ID
			for _, svc := range compose.APIServices {
				if running[svc] != dev {
					t.Errorf("service %s runs %s, not the recorded development image %s", svc, running[svc], dev)
				}
			}
			assertComposeServices(t, b, r)
			assertRuntimeCurrent(t, dir)
		},
		// Inside the recreation: Compose has created the controller's new container, the old one
		// is stopped or still there, the worker's turn is to come.
		// Killed there, occ takes the plugin down with it (its output pipe closes); interrupted,
		// it stops the plugin. The controller may be left stopped, its old container beside a
		// new one never started, until the next reload.
		during: []reloadSignalDuring{{name: "while Compose recreates the controller", mayStop: true, arm: func(t *testing.T) <-chan struct{} {
			return containerCreated(t, b, r.settings.Project, "controller")
		}}},
	}
	// -run 'TestComposeReload/kill' runs both matrices.
	t.Run("kill SIGKILL", func(t *testing.T) { testReloadSignals(t, sig, syscall.SIGKILL) })
	t.Run("kill SIGINT", func(t *testing.T) { testReloadSignals(t, sig, syscall.SIGINT) })

	// A reload of the controller alone recreates only it; the next full reload recreates the
	// worker, which still runs the image before.
	editSource(t, script, "edit for the controller alone")
	res, err = occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir, Services: []string{"controller"}}})
	if err != nil {
		t.Fatalf("reload controller: %v", err)
	}
	if !slices.Equal(res.Rolled, []string{"controller"}) || len(res.Images) != 1 || res.Images[0].Role != "development" {
		t.Errorf("reload controller: rolled %q, rebuilt %+v; want the controller alone, from the development image", res.Rolled, res.Images)
	}
	stack := compose.Stack{Project: r.settings.Project, Engine: b.engine.Verbs()}
	running, err := stack.ServiceImages(ctx, compose.APIServices...)
	if err != nil {
		t.Fatal(err)
	}
	if built := imageOf(res, "development").Current; running["controller"] != built || running["worker-kubernetes"] == built {
		t.Errorf("after reloading the controller alone the services run %v; built %s", running, built)
	}
	res, err = occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
	if err != nil {
		t.Fatalf("full reload after the controller's: %v", err)
	}
	if !slices.Equal(res.Rolled, []string{"worker-kubernetes"}) {
		t.Errorf("the full reload after the controller's recreated %q, want the worker alone", res.Rolled)
	}

	// Refusals: an unknown service names the valid ones; a moved checkout says what to do.
	_, err = occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir, Services: []string{"no-such-service"}}})
	if err == nil || !strings.Contains(err.Error(), "no-such-service") || !strings.Contains(err.Error(), "controller") {
		t.Errorf("unknown service: %v", err)
	}
	moved := r.checkout + "-moved"
	if err := os.Rename(r.checkout, moved); err != nil {
		t.Fatal(err)
	}
	_, err = occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
	if err := os.Rename(moved, r.checkout); err != nil {
		t.Fatal(err)
	}
	if err == nil || !strings.Contains(err.Error(), "its checkout "+r.checkout+" is gone") || !strings.Contains(err.Error(), "occ dev down --state-dir "+dir) {
		t.Errorf("moved checkout: %v", err)
	}
	if _, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: filepath.Join(t.TempDir(), "none")}}); err == nil || !strings.Contains(err.Error(), "nothing to reload") {
		t.Errorf("no environment: %v", err)
	}

	// `down` removes everything, the images of every reload included.
	// A reload interrupted once the rebuilt images are in the node, recorded but not yet run,
	// is finished by `down` as well.
	editSource(t, script, "edit before an interrupted reload that down finishes")
	editRuntime(t, r.checkout)
	if _, err := occdev.Reload(ctx, reloadFailingAfter(dir, "Verify the rebuilt images in the node")); err == nil {
		t.Fatal("the interrupted reload succeeded")
	}
	if st := mustState(t, dir); len(clusterImagesOf(st, recordedRole(st, "runtime").InCluster)) != 2 {
		t.Errorf("the interrupted reload should have recorded the rebuilt runtime beside the running one: %q", clusterImagesOf(st, recordedRole(st, "runtime").InCluster))
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: dir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if !stateGone(dir) {
		t.Error("down kept the state directory")
	}
	if left := b.projectLeftovers(t, r, vols); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
	if extra := b.newVolumes(t, volumesBefore, name, r.settings.Project); len(extra) > 0 {
		t.Errorf("volumes left after down: %v", extra)
	}
}

// assertComposeServices requires the profile's long-running services to run and its API to
// answer.
func assertComposeServices(t *testing.T, b *composeBed, r *composeRun) {
	t.Helper()
	states, err := compose.Stack{Project: r.settings.Project, Engine: b.engine.Verbs()}.Status(context.Background(), compose.RequiredServices...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"postgres": "running (healthy)", "migrate": "exited with code 0", "bootstrap": "exited with code 0", "controller": "running (healthy)", "worker-kubernetes": "running"}
	for _, s := range states {
		if s.String() != want[s.Service] {
			t.Errorf("service %s is %s, want %s", s.Service, s, want[s.Service])
		}
	}
}

// containerCreated is closed once the engine reports a new container of the project's service.
func containerCreated(t *testing.T, b *composeBed, project, service string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ev, errs := b.engine.API.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", "container"), filters.Arg("event", "create"),
		filters.Arg("label", "com.docker.compose.project="+project), filters.Arg("label", "com.docker.compose.service="+service))})
	created := make(chan struct{})
	go func() {
		select {
		case <-ev:
			close(created)
		case err := <-errs:
			if ctx.Err() == nil {
				t.Errorf("watch the engine's events: %v", err)
			}
		}
	}()
	return created
}

// installationRuntime is the Agent runtime's in-cluster reference the recorded Installation
// names, by the recorded runtime's repository.
func installationRuntime(t *testing.T, dir string) string {
	t.Helper()
	st := mustState(t, dir)
	repo, _, _ := strings.Cut(recordedRole(st, "runtime").InCluster, "@")
	inst, err := os.ReadFile(st.InstallationPath)
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(regexp.QuoteMeta(repo) + `@sha256:[0-9a-f]{64}`).FindString(string(inst))
	if repo == "" || ref == "" {
		t.Fatalf("the Installation names no Agent runtime of %q:\n%s", repo, inst)
	}
	return ref
}

// assertRuntimeCurrent requires the Installation to name the recorded Agent runtime, and the
// state to record that runtime as the only one imported into the node.
func assertRuntimeCurrent(t *testing.T, dir string) {
	t.Helper()
	st := mustState(t, dir)
	rt := recordedRole(st, "runtime")
	inst, err := os.ReadFile(st.InstallationPath)
	if err != nil {
		t.Fatal(err)
	}
	if rt.InCluster == "" || !strings.Contains(string(inst), rt.InCluster) {
		t.Errorf("the Installation does not name the recorded runtime %s:\n%s", rt.InCluster, inst)
	}
	imported := clusterImagesOf(st, rt.InCluster)
	if !slices.Equal(imported, []string{rt.InCluster}) {
		t.Errorf("the state records the runtime images %q in the node, want only %s", imported, rt.InCluster)
	}
}

// editRuntime changes the Agent runtime's Dockerfile (a label of its last stage), as an
// engineer's edit of the runtime does: the rebuilt runtime is a new image.
func editRuntime(t testing.TB, checkout string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(checkout, "deploy", "runtime", "Dockerfile"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "LABEL org.openclaw.test.edit=%q\n", time.Now().Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
}

// editSource changes the controller's source in the checkout, as an engineer's edit does.
func editSource(t testing.TB, path, what string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "// %s at %s\n", what, time.Now().Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
}

func fileDigest(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// controllerSource is the sha256 of the script the running controller stand-in was started as.
func controllerSource(t testing.TB, apiURL string) string {
	t.Helper()
	resp, err := controlplane.NewAPIClient(5 * time.Second).Get(apiURL + "/_standin/source")
	if err != nil {
		t.Fatalf("GET /_standin/source: %v", err)
	}
	defer resp.Body.Close()
	var v struct {
		SHA256 string `json:"sha256"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.SHA256
}

// waitControllerSource is controllerSource once the controller answers: a reload interrupted
// right after recreating it returns before the new container listens.
func waitControllerSource(t testing.TB, apiURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := controlplane.WaitReady(ctx, controlplane.ReadinessOptions{APIURL: apiURL}); err != nil {
		t.Fatalf("the controller does not answer: %v", err)
	}
	return controllerSource(t, apiURL)
}

func recordedRole(st state.State, role string) state.ControlPlaneImage {
	for _, img := range st.ControlPlane.Images {
		if img.Role == role {
			return img
		}
	}
	return state.ControlPlaneImage{}
}

func imageOf(res *reload.Result, role string) reload.Image {
	for _, img := range res.Images {
		if img.Role == role {
			return img
		}
	}
	return reload.Image{}
}
