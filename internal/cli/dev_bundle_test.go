package cli

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins/online/onlinetest"
)

// An engineer bundles a pin file's artifacts before a flight: create writes the file with
// progress, refuses to overwrite it, inspect names its pins (not the built-in ones) and every
// artifact, verify passes; the same file cut in half is refused, naming the artifact.
func TestDevBundleCreateInspectVerify(t *testing.T) {
	dir := isolatePins(t)
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	// The world's pins record no routing images, so up installs no routing and the bundle holds
	// no routing manifest: 7 artifacts. A presigned download URL: its query is a credential and is
	// never printed.
	w.Set.AgentSandbox.Manifest.URL += "?X-Amz-Signature=s3cr3t"
	file := writePinFile(t, dir, w.Set)
	out := filepath.Join(dir, "occ-bundle.tar")

	code, stdout, errOut := run(t, "dev", "bundle", "create", "--pin-file", file, "--platform", "linux/amd64", "--out", out)
	if code != 0 {
		t.Fatalf("create: exit %d, stderr %s\n%s", code, errOut, stdout)
	}
	digest, err := w.Set.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"✓ fetch k3s.image " + w.Set.K3s.Image.Name() + ":" + w.Set.K3s.Image.Tag + " (", "fetch openshell.sourceArchive: fetched 389 B at ", "✓ fetch openshell.sourceArchive (",
		"Wrote " + out + ": 7 artifacts", "for linux/amd64, pins " + digest + " (" + file + ")", "Check it with: occ dev bundle verify " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("create output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "s3cr3t") {
		t.Errorf("create printed a URL's query:\n%s", stdout)
	}
	if code, _, errOut = run(t, "dev", "bundle", "create", "--pin-file", file, "--platform", "linux/amd64", "--out", out); code != 2 || !strings.Contains(errOut, "already exists") {
		t.Errorf("create over the bundle: exit %d, stderr %s", code, errOut)
	}
	if code, _, errOut = run(t, "dev", "bundle", "create", "--pin-file", file, "--platform", "linux", "--out", out+"2"); code != 2 || !strings.Contains(errOut, "--platform") {
		t.Errorf("a bad --platform: exit %d, stderr %s", code, errOut)
	}

	code, stdout, errOut = run(t, "dev", "bundle", "inspect", out, "-o", "json")
	var in pinbundle.Inspection
	if err := json.Unmarshal([]byte(stdout), &in); code != 0 || err != nil {
		t.Fatalf("inspect -o json: exit %d, %v, stderr %s\n%s", code, err, errOut, stdout)
	}
	if in.Pins.Digest != digest || in.BuiltIn || len(in.Artifacts) != 7 || in.Artifacts[1].Size == 0 || len(in.Artifacts[1].Platforms) != 1 {
		t.Errorf("inspect: %+v", in)
	}
	code, stdout, _ = run(t, "dev", "bundle", "inspect", out)
	if code != 0 || !strings.Contains(stdout, "not the pins built into this occ") || !strings.Contains(stdout, "k3d.toolsImage  "+w.Set.K3d.ToolsImage.String()+"\n  "+w.Set.K3d.ToolsImage.Digest) {
		t.Errorf("inspect: exit %d\n%s", code, stdout)
	}

	if strings.Contains(stdout, "s3cr3t") || strings.Contains(string(readTarEntry(t, out, pinbundle.ContentsFile)), "s3cr3t") {
		t.Errorf("a URL's query is printed or in the table of contents")
	}

	code, stdout, errOut = run(t, "dev", "bundle", "verify", out)
	if code != 0 || !strings.Contains(stdout, "Bundle "+out+" is intact: 7 artifacts for linux/amd64") {
		t.Errorf("verify: exit %d, stderr %s\n%s", code, errOut, stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.tar")
	if err := os.WriteFile(cut, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "dev", "bundle", "verify", cut)
	if code != 1 || !strings.Contains(errOut, "the bundle is truncated") || !strings.Contains(errOut, "Create it again with occ dev bundle create") {
		t.Errorf("verify a bundle cut in half: exit %d, stderr %s", code, errOut)
	}
}

// readTarEntry is the body of the tar entry name in the file at path.
func readTarEntry(t *testing.T, path, name string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s has no %s: %v", path, name, err)
		}
		if h.Name == name {
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return body
		}
	}
}
