package occdev_test

import (
	"context"
	"encoding/base64"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
)

// plantCanary puts a registry token into the bed's platform namespace as a Secret and as the
// message of a crash-looping Pod and its Event, as a failed image pull would show it, and
// returns the token.
func plantCanary(t *testing.T, b *bed) string {
	t.Helper()
	canary := testbed.CanaryHex + "b0d1"
	_, err := b.Client.CoreV1().Secrets(b.Namespace).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "registry-token", Namespace: b.Namespace},
		Data:       map[string][]byte{"token": []byte(canary)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	playCrashingPod(t, b.Client, b.Namespace, "pull registry.example/gw failed: unauthorized, token "+canary)
	return canary
}

// bundlesBeside lists the debug bundles beside the state directory dir.
func bundlesBeside(t *testing.T, dir string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-diagnose-*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// failureBundleBeside reads the bundle the failed run's error names on its last line, which
// must lie beside the state directory dir as <dir>-diagnose-<time>.tar.gz.
func failureBundleBeside(t *testing.T, err error, dir string) (string, map[string]string) {
	t.Helper()
	path := bundleLine(t, err)
	if filepath.Dir(path) != filepath.Dir(dir) || !strings.HasPrefix(filepath.Base(path), filepath.Base(dir)+"-diagnose-") {
		t.Errorf("bundle at %s, want %s-diagnose-<time>.tar.gz beside the state directory", path, dir)
	}
	return path, readBundle(t, path)
}

// assertEntries requires the bundle's entries to say what want says and to lack every entry of
// absent.
func assertEntries(t *testing.T, entries map[string]string, want map[string]string, absent ...string) {
	t.Helper()
	for name, text := range want {
		got, ok := entries[name]
		if !ok {
			t.Errorf("bundle lacks %s; it has %q", name, entryNames(entries))
			continue
		}
		if !strings.Contains(got, text) {
			t.Errorf("%s does not say %q:\n%s", name, text, got)
		}
	}
	for _, name := range absent {
		if _, ok := entries[name]; ok {
			t.Errorf("bundle has %s:\n%s", name, entries[name])
		}
	}
}

// assertNoCanary requires the canary to appear in no entry, not even base64-encoded as a
// Secret's data is.
func assertNoCanary(t *testing.T, entries map[string]string, canary string) {
	t.Helper()
	b64 := base64.StdEncoding.EncodeToString([]byte(canary))
	for name, text := range entries {
		if strings.Contains(text, canary) || strings.Contains(text, b64) {
			t.Errorf("%s shows the canary:\n%s", name, text)
		}
	}
}

// failedRunEntries are the entries every failed command's bundle in a bed with plantCanary
// holds: its summary, occ's version, and the platform namespace's Events and Pod statuses;
// more adds the command's own.
func failedRunEntries(b *bed, command string, more map[string]string) map[string]string {
	ns := b.Namespace
	want := map[string]string{
		"summary.txt":                                     "occ dev " + command + " failed, for the development environment recorded in " + b.StateDir,
		"occ-version.txt":                                 "occ v9.9.9-test",
		"kubernetes/" + ns + "/events.yaml":               "reason: BackOff",
		"kubernetes/" + ns + "/pods/crashing/status.yaml": "restartCount: 1",
	}
	maps.Copy(want, more)
	return want
}

// A developer runs occ dev reload on an environment up brought up without an OCE checkout while
// a Pod crash-loops with a registry token in its message: the reload is refused, and its error
// ends with a debug bundle beside the kept state directory holding the reload's step timeline,
// the error, the state and the namespace's Events and Pod statuses, the token nowhere. With
// --no-diagnose, or when the user stopped the reload, there is none.
func TestFailedReloadWritesDebugBundle(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	if _, err := occdev.Up(ctx, b.Options()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = occdev.Down(context.Background(), occdev.DownOptions{StateDir: b.StateDir}) })
	canary := plantCanary(t, b)

	_, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: b.StateDir, OCCVersion: "occ v9.9.9-test"}})
	if err == nil || !strings.Contains(err.Error(), "it has no OCE control plane") {
		t.Fatalf("reload: %v; want the refusal of an environment without a control plane", err)
	}
	if _, err := state.Read(b.StateDir); err != nil {
		t.Errorf("the failed reload did not keep the state: %v", err)
	}
	_, entries := failureBundleBeside(t, err, b.StateDir)
	assertEntries(t, entries, failedRunEntries(b, "reload", map[string]string{
		"state.json":   `"platformNamespace": "` + b.Namespace + `"`,
		"error.txt":    "it has no OCE control plane",
		"timeline.txt": "failed   -            Check the recorded environment",
	}), "log.txt")
	assertNoCanary(t, entries, canary)

	// --no-diagnose: the same refusal, no bundle.
	_, err = occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: b.StateDir, NoDiagnose: true}})
	if err == nil || strings.Contains(err.Error(), "debug bundle") {
		t.Errorf("reload with NoDiagnose: %v; want the refusal without a bundle", err)
	}
	// A reload the user stopped did not fail: no bundle either.
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	_, err = occdev.Reload(stopped, occdev.ReloadOptions{Options: reload.Options{StateDir: b.StateDir}})
	if err == nil || strings.Contains(err.Error(), "debug bundle") {
		t.Errorf("a stopped reload: %v; want its error without a bundle", err)
	}
	if got := bundlesBeside(t, b.StateDir); len(got) != 1 {
		t.Errorf("bundles beside the state directory: %q; want the first reload's alone", got)
	}
}

// An admission policy of the developer's cluster refuses to delete occ's RuntimeClass, while a
// Pod crash-loops with a registry token in its message: occ dev down removes the rest, keeps the
// state directory, and its error ends with a debug bundle beside it holding the error, the
// removal log, the state of what is left and the namespace's Events, the token nowhere.
func TestFailedDownWritesDebugBundle(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	if _, err := occdev.Up(ctx, b.Options()); err != nil {
		t.Fatal(err)
	}
	release := denyRuntimeClassDeletes(t, b)
	canary := plantCanary(t, b)

	_, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir, OCCVersion: "occ v9.9.9-test"})
	if err == nil || !strings.Contains(err.Error(), "cleanup incomplete; preserving "+b.StateDir) {
		t.Fatalf("down: %v; want the incomplete cleanup", err)
	}
	path, entries := failureBundleBeside(t, err, b.StateDir)
	assertEntries(t, entries, failedRunEntries(b, "down", map[string]string{
		"state.json": `"kind": "RuntimeClass"`,
		"error.txt":  "RuntimeClass",
		"log.txt":    "removed ",
	}), "timeline.txt", "plan.json")
	assertNoCanary(t, entries, canary)

	// With the obstacle gone, down finishes; the bundle stays where it was written.
	release()
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down after the obstacle is gone: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the bundle went with the state directory: %v", err)
	}
}
