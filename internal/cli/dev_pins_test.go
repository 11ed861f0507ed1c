package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online"
	"github.com/openclaw/occ/internal/occdev/pins/online/onlinetest"
)

// isolatePins clears the pin file settings a developer's shell may carry.
func isolatePins(t *testing.T) string {
	t.Helper()
	dir := isolate(t)
	for _, k := range []string{settingPinFile.env, "OCC_PIN_FILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	return dir
}

// writePinFile writes set as a pin file in dir.
func writePinFile(t *testing.T, dir string, set *pins.Set) string {
	t.Helper()
	data, err := pins.Encode(set, "test pins")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pins.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An engineer asks which pins `occ dev up` would use: the built-in set with its notes beside
// their pins, then a pin file named by the flag or the variable, each saying where it came from.
func TestDevPinsShow(t *testing.T) {
	dir := isolatePins(t)
	code, out, errOut := run(t, "dev", "pins", "show")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{
		"Pins in effect: built into occ (embedded pins.yaml)",
		"openshell                      0.1.3-pre.2 (commit 021400be8af471f8669369e679de3e18cf0bd672)\n                               note: Known upstream defect",
		"k3d.toolsImage                 ghcr.io/k3d-io/k3d-tools:5.9.0@sha256:f18c1e21aba123fe6ff315c514a0feffc005f587aa3db773e89489c2118842dd\n                               note: Two public texts",
		"routing.envoyGateway.manifest  https://github.com/envoyproxy/gateway/releases/download/v1.6.7/install.yaml\n                               sha256 9a250c698d78b92c670d9d2bd6bd54615f1dee41ddd520ece9704edf63088df8\n                               Envoy Gateway v1.6.7\nrouting.envoyGateway.images    none recorded (up installs no routing controllers)",
		"sha256 77afc69ad28e55f11a05cbc68d6dc5a6cc5c989a68d0f9d55ae0868af2b3f476",
		"oce.postgresImage",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "dev", "pins", "show", "-o", "json")
	var doc pinsShown
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("-o json: exit %d, %v\n%s", code, err, out)
	}
	if !doc.BuiltIn || doc.Source != "built in" || len(doc.Pins) != 17 || len(doc.Pins[0].Notes) != 1 || doc.Pins[0].Key != pins.KeyOpenShell {
		t.Errorf("json document %+v", doc)
	}

	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	set.OpenShell.Version = "0.1.3-pre.9"
	set.Notes = nil
	file := writePinFile(t, dir, set)
	code, out, errOut = run(t, "dev", "pins", "show", "--pin-file", file)
	if code != 0 || !strings.Contains(out, "Pins in effect: "+file+" (from --pin-file)") || !strings.Contains(out, "0.1.3-pre.9") || strings.Contains(out, "note:") {
		t.Errorf("--pin-file: exit %d, stderr %s\n%s", code, errOut, out)
	}
	t.Setenv(settingPinFile.env, file)
	code, out, _ = run(t, "dev", "pins", "show", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "from: "+settingPinFile.env) || !strings.Contains(out, "builtIn: false") {
		t.Errorf("%s: exit %d\n%s", settingPinFile.env, code, out)
	}

	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("schemaVersion: 1\nopenshel: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "dev", "pins", "show", "--pin-file", broken)
	if code != 2 || !strings.Contains(errOut, broken) || !strings.Contains(errOut, "openshel") {
		t.Errorf("a broken pin file: exit %d, stderr %s", code, errOut)
	}
}

// verify on the command line: a set served as pinned passes (exit 0, a table per image and
// platform); a single-platform k3d tools pin makes it exit 1 naming the misses, and -o json
// carries the same checks.
func TestDevPinsVerify(t *testing.T) {
	dir := isolatePins(t)
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	file := writePinFile(t, dir, w.Set)
	code, out, errOut := run(t, "dev", "pins", "verify", "--pin-file", file)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"Pins: " + file, "\nopenshell.images.gateway  " + w.Set.OpenShell.Images.Gateway.String() + "\n  ok    digest         resolves to a multi-platform index",
		"  ok    linux/arm64    sha256:", "\nagentSandbox.manifest  " + w.Set.AgentSandbox.Manifest.URL + "\n  ok    sha256         matches", "All 32 checks passed."} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}

	tools := w.Set.K3d.ToolsImage
	_, children := w.Reg.PushIndex(t, tools.Repository+":"+tools.Tag, onlinetest.AMD64, onlinetest.ARM64)
	w.Set.K3d.ToolsImage.Digest = children["linux/amd64"]
	file = writePinFile(t, dir, w.Set)
	code, out, errOut = run(t, "dev", "pins", "verify", "--pin-file", file)
	if code != 1 || !strings.Contains(out, "  MISS  linux/arm64    the pin is a single-platform linux/amd64 manifest") || !strings.Contains(out, "2 of 32 checks missed.") ||
		!strings.Contains(errOut, "2 of 32 pin checks missed (k3d.toolsImage tag 5.9.0, k3d.toolsImage linux/arm64)") {
		t.Errorf("single-platform tools pin: exit %d, stderr %s\n%s", code, errOut, out)
	}
	code, out, _ = run(t, "dev", "pins", "verify", "--pin-file", file, "-o", "json")
	var rep online.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 1 || err != nil || rep.Misses() != 2 || len(rep.Checks) != 32 {
		t.Errorf("-o json: exit %d, %v, %d misses of %d", code, err, rep.Misses(), len(rep.Checks))
	}
}

// resolve on the command line: the pin file of release 0.1.5 is written to --out and loads; a
// second run refuses to overwrite it without --force; without --out the pin file is the output;
// missing or bad flags are usage errors; a release with a single-platform image fails naming it.
func TestDevPinsResolve(t *testing.T) {
	dir := isolatePins(t)
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	base := writePinFile(t, dir, w.Set)
	w.Release(t, "0.1.5", onlinetest.ReleaseCommit, onlinetest.ChartFiles())
	out := filepath.Join(dir, "pins-0.1.5.yaml")

	code, stdout, errOut := run(t, "dev", "pins", "resolve", "--pin-file", base, "--openshell", "0.1.5", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	set, err := pins.Load(out)
	if err != nil || set.OpenShell.Version != "0.1.5" || set.OpenShell.Commit != onlinetest.ReleaseCommit {
		t.Fatalf("the written file: %v %+v", err, set)
	}
	for _, want := range []string{"OpenShell 0.1.5, commit " + onlinetest.ReleaseCommit + " (from the archive's pax global header)", "openshell.images.gateway  " + set.OpenShell.Images.Gateway.String() + " (linux/amd64, linux/arm64/v8)",
		"kept from " + base, "dropped the note about openshell", "Wrote " + out + ". Check it with: occ dev pins verify --pin-file " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	before, _ := os.ReadFile(out)
	// An --out that exists is refused before anything is downloaded.
	requests := w.Reg.Requests()
	code, _, errOut = run(t, "dev", "pins", "resolve", "--pin-file", base, "--openshell", "0.1.5", "--out", out)
	if after, _ := os.ReadFile(out); code != 2 || !strings.Contains(errOut, "already exists") || !strings.Contains(errOut, "--force") || string(after) != string(before) {
		t.Errorf("second run without --force: exit %d, stderr %s", code, errOut)
	}
	if n := w.Reg.Requests() - requests; n != 0 {
		t.Errorf("the refused second run sent %d request(s) to the registry first", n)
	}
	if code, _, errOut = run(t, "dev", "pins", "resolve", "--pin-file", base, "--openshell", "v0.1.5", "--out", out, "--force", "-o", "json"); code != 0 {
		t.Errorf("--force: exit %d, stderr %s", code, errOut)
	}

	code, stdout, errOut = run(t, "dev", "pins", "resolve", "--pin-file", base, "--openshell", "0.1.5")
	if code != 0 {
		t.Fatalf("to stdout: exit %d, stderr %s", code, errOut)
	}
	if _, err := pins.Parse([]byte(stdout), "stdout"); err != nil || !strings.Contains(errOut, "OpenShell 0.1.5, commit") {
		t.Errorf("stdout is not the pin file (%v), or the summary is not on stderr:\n%s", err, errOut)
	}

	for _, args := range [][]string{
		{"--out", filepath.Join(dir, "x.yaml")},
		{"--openshell", "latest"},
		{"--openshell", "0.1.5", "--commit", "abc123"},
		{"--openshell", "0.1.5", "--force"},
		{"--openshell", "0.1.5", "--k3s-image", "Rancher/K3s:v1"},
	} {
		code, _, errOut := run(t, append([]string{"dev", "pins", "resolve", "--pin-file", base}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr %s", args, code, errOut)
		}
	}

	w.Reg.PushImage(t, "nvidia/openshell/supervisor:"+onlinetest.ReleaseCommit, onlinetest.AMD64)
	code, _, errOut = run(t, "dev", "pins", "resolve", "--pin-file", base, "--openshell", "0.1.5", "--out", filepath.Join(dir, "never.yaml"))
	if code != 1 || !strings.Contains(errOut, "openshell.images.supervisor: image "+w.Reg.Host+"/nvidia/openshell/supervisor:"+onlinetest.ReleaseCommit+" is a single-platform manifest") {
		t.Errorf("single-platform supervisor: exit %d, stderr %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "never.yaml")); err == nil {
		t.Errorf("a refused resolve wrote its file")
	}
}

// The routing controllers' images are pinned with one command: alone (the pins in effect with
// the images recorded), or with --openshell in the same file; the written file installs routing.
func TestDevPinsResolveRouting(t *testing.T) {
	dir := isolatePins(t)
	w, digests := onlinetest.RoutingWorld(t, "../occdev/platform/testdata/routing", false)
	base := writePinFile(t, dir, w.Set)
	out := filepath.Join(dir, "routed.yaml")
	code, stdout, errOut := run(t, "dev", "pins", "resolve", "--pin-file", base, "--routing", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	set, err := pins.Load(out)
	if err != nil || !set.Routing.Resolved() || len(set.RoutingImages()) != 6 || set.OpenShell != w.Set.OpenShell {
		t.Fatalf("the written file: %v %+v", err, set.Routing)
	}
	gw := w.Reg.Host + "/envoyproxy/gateway:v1.6.7@" + digests["envoyproxy/gateway:v1.6.7"]
	for _, want := range []string{"Routing controllers' images, from " + base, "routing.envoyGateway.images  " + gw + " (linux/amd64, linux/arm64/v8)",
		"routing manifest  " + w.Set.Routing.CertManager.Manifest.URL, "dropped the note about routing", "Wrote " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}

	w.Release(t, "0.1.5", onlinetest.ReleaseCommit, onlinetest.ChartFiles())
	code, stdout, errOut = run(t, "dev", "pins", "resolve", "--pin-file", base, "--openshell", "0.1.5", "--routing")
	if code != 0 {
		t.Fatalf("with --openshell: exit %d, stderr %s", code, errOut)
	}
	both, err := pins.Parse([]byte(stdout), "stdout")
	if err != nil || both.OpenShell.Version != "0.1.5" || len(both.RoutingImages()) != 6 {
		t.Errorf("with --openshell: %v", err)
	}
	if !strings.Contains(errOut, "routing.certManager.images  ") || strings.Contains(errOut, "routing.certManager.images,") || !strings.Contains(errOut, "routing.certManager.manifest") {
		t.Errorf("with --openshell the account lists the routing images and keeps the manifests:\n%s", errOut)
	}
	for _, args := range [][]string{{"--commit", onlinetest.ReleaseCommit, "--routing"}, {"--routing", "--k3s-image", "docker.io/rancher/k3s:v1.37.1-k3s1"}, {}} {
		if code, _, errOut := run(t, append([]string{"dev", "pins", "resolve", "--pin-file", base}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr %s", args, code, errOut)
		}
	}
}

// A CI job keys its bundle cache by the pins in effect: the built-in set's digest, the same
// digest for a pin file that only reformats it, another for a pin file that moves one pin, and
// -o json names the source beside the digest.
func TestDevPinsDigest(t *testing.T) {
	dir := isolatePins(t)
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	want, err := set.Digest()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "dev", "pins", "digest")
	if code != 0 || out != want+"\n" {
		t.Fatalf("built in: exit %d, stderr %s, stdout %q, want %q", code, errOut, out, want+"\n")
	}
	same := writePinFile(t, dir, set)
	code, out, _ = run(t, "dev", "pins", "digest", "--pin-file", same, "-o", "json")
	var doc pinsDigest
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Digest != want || doc.Source != same {
		t.Errorf("the re-encoded set: exit %d, %v, %+v", code, err, doc)
	}
	set.K3s.Image.Tag = "v1.36.5-k3s1"
	t.Setenv(settingPinFile.env, writePinFile(t, t.TempDir(), set))
	code, out, _ = run(t, "dev", "pins", "digest")
	if code != 0 || len(out) != 65 || out == want+"\n" {
		t.Errorf("another k3s pin: exit %d, digest %q, want one other than %s", code, out, want)
	}
}
