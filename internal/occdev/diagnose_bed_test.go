package occdev_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/diagnose"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
)

// readBundle extracts a debug bundle: its entries by their path inside the bundle's directory.
// Every entry must sit in that one directory, and the archive must be private to the user.
func readBundle(t *testing.T, path string) map[string]string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("bundle %s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	dir := strings.TrimSuffix(filepath.Base(path), ".tar.gz") + "/"
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(h.Name, dir)
		if !ok {
			t.Errorf("entry %s is outside the bundle's directory %s", h.Name, dir)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(data)
	}
	return out
}

// entryNames lists a bundle's entries, sorted, for messages.
func entryNames(entries map[string]string) []string {
	var out []string
	for n := range entries {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// playCrashingPod creates, in ns, a Pod whose container restarted once (as a crash-looping
// Gateway would show) and an Event about it, each carrying message; the bed has no kubelet, so
// the test writes the status itself.
func playCrashingPod(t *testing.T, c kubernetes.Interface, ns, message string) {
	t.Helper()
	ctx := context.Background()
	pod, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crashing", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "gateway", Image: "gateway:test"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Message: message, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "gateway", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: message}},
	}}}
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "crashing.backoff", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "crashing"},
		Reason:         "BackOff", Type: corev1.EventTypeWarning, Message: message, Count: 3,
		LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "kubelet"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// bundleLine is the last line of a failed up's error, which names its debug bundle.
func bundleLine(t *testing.T, err error) string {
	t.Helper()
	lines := strings.Split(err.Error(), "\n")
	path, ok := strings.CutPrefix(lines[len(lines)-1], "debug bundle: ")
	if !ok {
		t.Fatalf("the error's last line does not name the debug bundle: %v", err)
	}
	return path
}

// The Gateway crash-loops and up fails at its last check: before the rollback removes the
// evidence, up writes a debug bundle beside the state directory with the recorded state, the
// plan, the failure, the step timeline, the platform namespace's Events and Pod statuses and
// the Helm releases' status, names it on the error's last line, and the rollback still
// completes.
func TestFailedUpWritesDebugBundleBeforeRollback(t *testing.T) {
	b := newBed(t)
	opts := b.Options()
	opts.OCCVersion = "occ v9.9.9-test"
	var releases []state.Object
	opts.Seams().AfterStep = func(name string) error {
		if name != "Check Gateway health" {
			return nil
		}
		st, err := state.Read(b.StateDir)
		if err != nil {
			t.Errorf("read the state at the failure: %v", err)
		}
		for _, o := range st.Objects {
			if o.Type == helmrelease.TypeRelease {
				releases = append(releases, o)
			}
		}
		playCrashingPod(t, b.Client, b.Namespace, "back-off restarting failed container gateway")
		return errors.New("injected failure")
	}
	_, err := occdev.Up(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "injected failure") || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("up: %v; want the injected failure, rolled back", err)
	}
	if _, err := os.Stat(b.StateDir); err == nil {
		t.Errorf("the state directory is kept: the bundle must not stop the rollback")
	}
	_, entries := failureBundleBeside(t, err, b.StateDir)
	t.Logf("bundle entries: %q", entryNames(entries))
	ns := b.Namespace
	want := map[string]string{
		"summary.txt":                       "occ dev up failed",
		"occ-version.txt":                   "occ v9.9.9-test",
		"state.json":                        `"platformNamespace": "` + ns + `"`,
		"plan.json":                         `"namespace": "` + ns + `"`,
		"error.txt":                         "injected failure",
		"timeline.txt":                      "Install the OpenShell Gateway chart",
		"kubernetes/" + ns + "/events.yaml": "reason: BackOff",
		"kubernetes/" + ns + "/pods/crashing/status.yaml": "restartCount: 1",
	}
	if len(releases) == 0 {
		t.Fatal("no Helm release was recorded by the failure")
	}
	for _, r := range releases {
		want["helm/"+r.Namespace+"/"+r.Name+".yaml"] = "status: deployed"
	}
	assertEntries(t, entries, want)
	// The timeline gives each step its duration and result; the failing step's error is in it.
	if tl := entries["timeline.txt"]; !strings.Contains(tl, " ok ") || !strings.Contains(tl, "Claim the private state directory") {
		t.Errorf("timeline lacks the steps' results:\n%s", tl)
	}
	// The restarted container's log is read for its current and its previous run (the bed's
	// apiserver, without a kubelet, answers both with no lines).
	for _, run := range []string{"gateway.log", "gateway.previous.log"} {
		if _, ok := entries["kubernetes/"+ns+"/pods/crashing/"+run]; !ok {
			t.Errorf("bundle lacks the log %s of the restarted container", run)
		}
	}
	// What could not be collected is said, with its cause: the bed's cluster has no engine.
	summary := entries["summary.txt"]
	if os.Getenv("OCC_DUMP_BUNDLE") != "" {
		t.Logf("summary.txt:\n%s\ntimeline.txt:\n%s", summary, entries["timeline.txt"])
	}
	for _, s := range []string{"Not collected (1)", "engine.yaml: no container engine is recorded", "Collected (11)"} {
		if !strings.Contains(summary, s) {
			t.Errorf("summary does not say %q:\n%s", s, summary)
		}
	}
}

// A failing up in a developer's cluster whose Secrets, Events and pinned download URL carry
// credentials (a registry token echoed by an image pull failure, userinfo and a query token in
// a private mirror's URL): none of them appears anywhere in the debug bundle, while the Event
// and the Pod status that carried them are still there.
func TestDebugBundleNeverShowsASecret(t *testing.T) {
	b := newBed(t)
	canary := testbed.CanaryHex + "d1a6"
	set, err := pins.Load(b.PinFile)
	if err != nil {
		t.Fatal(err)
	}
	set.AgentSandbox.Manifest.URL = strings.Replace(set.AgentSandbox.Manifest.URL, "http://", "http://mirror:"+canary+"@", 1) + "?token=" + canary
	data, err := yaml.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.PinFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	opts := b.Options()
	leak := "pull https://robot:" + canary + "@registry.example/gw?access_token=" + canary + " failed: unauthorized, token " + canary
	opts.Seams().AfterStep = func(name string) error {
		if name != "Check Gateway health" {
			return nil
		}
		ctx := context.Background()
		_, err := b.Client.CoreV1().Secrets(b.Namespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "registry-token", Namespace: b.Namespace},
			Data:       map[string][]byte{"token": []byte(canary)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Error(err)
		}
		playCrashingPod(t, b.Client, b.Namespace, leak)
		return errors.New("injected failure: " + leak)
	}
	_, err = occdev.Up(context.Background(), opts)
	if err == nil {
		t.Fatal("up succeeded; want the injected failure")
	}
	entries := readBundle(t, bundleLine(t, err))
	if os.Getenv("OCC_DUMP_BUNDLE") != "" {
		for _, n := range entryNames(entries) {
			t.Logf("=== %s\n%s", n, entries[n])
		}
	}
	assertNoCanary(t, entries, canary)
	events := entries["kubernetes/"+b.Namespace+"/events.yaml"]
	if !strings.Contains(events, "reason: BackOff") || !strings.Contains(events, "robot:"+diagnose.Redacted) && !strings.Contains(events, diagnose.Redacted+"@registry.example") {
		t.Errorf("the Event is missing or not redacted in place:\n%s", events)
	}
	if !strings.Contains(entries["kubernetes/"+b.Namespace+"/pods/crashing/status.yaml"], diagnose.Redacted) {
		t.Errorf("the Pod status lost its message:\n%s", entries["kubernetes/"+b.Namespace+"/pods/crashing/status.yaml"])
	}
}

// A developer's environment is up and misbehaving: occ dev diagnose writes the same facts into
// the archive they name (state, Events, Pod statuses, Helm releases), and refuses to write over
// a file that exists, leaving it as it was.
func TestDiagnoseRunningEnvironment(t *testing.T) {
	b := newBed(t)
	if _, err := occdev.Up(context.Background(), b.Options()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = occdev.Down(context.Background(), occdev.DownOptions{StateDir: b.StateDir}) })
	playCrashingPod(t, b.Client, b.Namespace, "back-off restarting failed container gateway")
	st, err := state.Read(b.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bug.tar.gz")
	res, err := observe.Diagnose(context.Background(), observe.DiagnoseOptions{StateDir: b.StateDir, Output: out, Version: "occ v9.9.9-test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != out {
		t.Errorf("path %s, want %s", res.Path, out)
	}
	entries := readBundle(t, out)
	t.Logf("bundle entries: %q", entryNames(entries))
	ns := b.Namespace
	want := map[string]string{
		"summary.txt":                       "collected on request",
		"occ-version.txt":                   "occ v9.9.9-test",
		"state.json":                        `"platformNamespace": "` + ns + `"`,
		"kubernetes/" + ns + "/events.yaml": "reason: BackOff",
		"kubernetes/" + ns + "/pods/crashing/status.yaml": "restartCount: 1",
	}
	for _, o := range st.Objects {
		if o.Type == helmrelease.TypeRelease {
			want["helm/"+o.Namespace+"/"+o.Name+".yaml"] = "status: deployed"
		}
	}
	for name, text := range want {
		if got, ok := entries[name]; !ok || !strings.Contains(got, text) {
			t.Errorf("%s: want %q, got (present %v):\n%s", name, text, ok, got)
		}
	}
	for _, absent := range []string{"error.txt", "timeline.txt"} {
		if _, ok := entries[absent]; ok {
			t.Errorf("a bundle on request has %s, which only a failed run has", absent)
		}
	}

	// The same file again: refused, naming the setting and the fix, and the file is untouched.
	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, err = observe.Diagnose(context.Background(), observe.DiagnoseOptions{StateDir: b.StateDir, Output: out})
	var oe *occdev.OptionError
	if !errors.As(err, &oe) || oe.Option != "--archive" || oe.Value != out || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("diagnose over an existing file: %v; want an option error naming --archive, the file and the fix", err)
	}
	if after, _ := os.ReadFile(out); string(after) != string(before) {
		t.Error("the existing file was changed")
	}
}
