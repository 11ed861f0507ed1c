package online

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online/onlinetest"
)

func verify(t *testing.T, set *pins.Set) *Report {
	t.Helper()
	rep, err := Verify(context.Background(), set, Deps{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

// find returns the check of pin named check, failing the test when there is none.
func find(t *testing.T, rep *Report, pin, check string) Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Pin == pin && c.Check == check {
			return c
		}
	}
	t.Fatalf("no check %q of %s in %+v", check, pin, rep.Checks)
	return Check{}
}

func misses(rep *Report) []string {
	var out []string
	for _, c := range rep.Checks {
		if !c.OK {
			out = append(out, c.Pin+" "+c.Check+": "+c.Detail)
		}
	}
	return out
}

// A pin set whose every image is a two-platform index served under its tag, and whose downloads
// match, verifies: four checks per image (digest, tag, linux/amd64, linux/arm64) and one per
// download, all passing.
func TestVerifyPassesASetServedAsPinned(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	rep := verify(t, w.Set)
	if m := misses(rep); len(m) > 0 {
		t.Fatalf("misses:\n%s", strings.Join(m, "\n"))
	}
	if got := len(rep.Checks); got != 7*4+4 {
		t.Errorf("%d checks, want %d (7 images × 4; 4 downloads: the archive and the Agent Sandbox, cert-manager and Envoy Gateway manifests)", got, 7*4+4)
	}
	c := find(t, rep, pins.KeyGatewayImage, "digest")
	if !strings.Contains(c.Detail, "multi-platform index") || !strings.Contains(c.Detail, "linux/amd64, linux/arm64/v8") || strings.Contains(c.Detail, "unknown") {
		t.Errorf("gateway digest detail %q: want the index's platforms without the attestation entry", c.Detail)
	}
	if c := find(t, rep, pins.KeySourceArchive, "sha256"); !strings.HasPrefix(c.Detail, "matches (") {
		t.Errorf("archive check %+v", c)
	}
	if rep.Source != "test pins" {
		t.Errorf("source %q", rep.Source)
	}
}

// The k3d tools case: the pin names one platform's manifest of an index (one of two public digests
// for the same tag). verify says it is a single-platform linux/amd64 manifest, that an arm64
// engine cannot run it, and that the tag serves the index to pin instead.
func TestVerifyNamesASinglePlatformPinAndTheIndexItsTagServes(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	tools := w.Set.K3d.ToolsImage
	index, children := w.Reg.PushIndex(t, tools.Repository+":"+tools.Tag, onlinetest.AMD64, onlinetest.ARM64)
	w.Set.K3d.ToolsImage.Digest = children["linux/amd64"]
	rep := verify(t, w.Set)

	if c := find(t, rep, pins.KeyK3dToolsImage, "digest"); !c.OK || !strings.Contains(c.Detail, "single-platform manifest") || !strings.Contains(c.Detail, "linux/amd64") {
		t.Errorf("digest check %+v: want it resolved and named single-platform linux/amd64", c)
	}
	tag := find(t, rep, pins.KeyK3dToolsImage, "tag 5.9.0")
	if tag.OK || !strings.Contains(tag.Detail, "serves "+index) || !strings.Contains(tag.Detail, "linux/amd64 entry is the pinned manifest") ||
		!strings.Contains(tag.Detail, "pin the index instead: "+tools.Name()+":5.9.0@"+index) {
		t.Errorf("tag check %+v: want a miss naming the index to pin", tag)
	}
	if c := find(t, rep, pins.KeyK3dToolsImage, "linux/amd64"); !c.OK {
		t.Errorf("linux/amd64 check %+v", c)
	}
	arm := find(t, rep, pins.KeyK3dToolsImage, "linux/arm64")
	if arm.OK || !strings.Contains(arm.Detail, "single-platform linux/amd64 manifest") || !strings.Contains(arm.Detail, "Apple Silicon") {
		t.Errorf("linux/arm64 check %+v: want a miss naming the pin's platform and who cannot run it", arm)
	}
	if n := rep.Misses(); n != 2 {
		t.Errorf("%d misses, want 2 (the tag and linux/arm64):\n%s", n, strings.Join(misses(rep), "\n"))
	}
}

// An image published for x86-64 only: its index lacks linux/arm64, which verify names with the
// platforms the index does hold.
func TestVerifyMissesAnIndexWithoutARM64(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	pg := w.Set.OCE.PostgresImage
	digest, _ := w.Reg.PushIndex(t, pg.Repository+":"+pg.Tag, onlinetest.AMD64)
	w.Set.OCE.PostgresImage.Digest = digest
	rep := verify(t, w.Set)
	c := find(t, rep, pins.KeyOCEPostgresImage, "linux/arm64")
	if c.OK || !strings.Contains(c.Detail, "the index has no linux/arm64 entry (it holds linux/amd64)") {
		t.Errorf("linux/arm64 check %+v", c)
	}
	if m := misses(rep); len(m) != 1 {
		t.Errorf("misses, want only postgres linux/arm64:\n%s", strings.Join(m, "\n"))
	}
}

// Hand-edited pins go stale: a tag the registry never had, a digest it does not serve, a
// manifest replaced at its URL, an archive URL that answers 404. Each is a miss naming what the
// server answered and the fix.
func TestVerifyMissesStalePins(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	w.Set.OCE.NodeBaseImage.Tag = "24-trixie" // never pushed
	w.Set.K3s.Image.Digest = "sha256:" + strings.Repeat("0", 64)
	w.Files.Put(onlinetest.ManifestPath, []byte("replaced\n"))
	w.Set.OpenShell.SourceArchive.URL = w.Files.URL + "/NVIDIA/OpenShell/archive/refs/tags/v9.9.9.tar.gz?token=sekrit"

	rep := verify(t, w.Set)
	if c := find(t, rep, pins.KeyOCENodeBaseImage, "tag 24-trixie"); c.OK || !strings.Contains(c.Detail, "has no tag 24-trixie") {
		t.Errorf("missing tag: %+v", c)
	}
	if c := find(t, rep, pins.KeyOCENodeBaseImage, "digest"); !c.OK {
		t.Errorf("the node base digest itself still resolves: %+v", c)
	}
	if c := find(t, rep, pins.KeyK3sImage, "digest"); c.OK || !strings.Contains(c.Detail, "serves no manifest sha256:000") {
		t.Errorf("missing digest: %+v", c)
	}
	for _, c := range rep.Checks {
		if c.Pin == pins.KeyK3sImage && strings.HasPrefix(c.Check, "linux/") {
			t.Errorf("platforms of a digest that does not resolve were reported: %+v", c)
		}
	}
	if c := find(t, rep, pins.KeyAgentSandbox, "sha256"); c.OK || !strings.Contains(c.Detail, "has sha256 "+onlinetest.SHA256([]byte("replaced\n"))) {
		t.Errorf("replaced manifest: %+v", c)
	}
	c := find(t, rep, pins.KeySourceArchive, "sha256")
	if c.OK || !strings.Contains(c.Detail, "404 Not Found") {
		t.Errorf("missing archive: %+v", c)
	}
	doc, _ := json.Marshal(rep)
	if strings.Contains(string(doc), "sekrit") {
		t.Errorf("the report carries the URL's query: %s", c.Subject)
	}
	if c := find(t, rep, pins.KeyK3sImage, "tag v1.36.4-k3s1"); c.OK || !strings.Contains(c.Detail, "not the pinned sha256:000") {
		t.Errorf("the k3s tag serves another digest than the broken pin: %+v", c)
	}
	if n := rep.Misses(); n != 5 {
		t.Errorf("%d misses, want 5:\n%s", n, strings.Join(misses(rep), "\n"))
	}
}

// A private registry: without credentials every image check misses with a 401 and the fix
// (docker login); with the user's docker config holding them, everything verifies. The
// password is in no check.
func TestVerifyReadsCredentialsFromTheDockerConfig(t *testing.T) {
	const user, pass = "ci-reader", "pa55-for-the-test-registry"
	w := onlinetest.NewWorld(t, user, pass)

	onlinetest.IsolateDockerConfig(t, nil)
	rep := verify(t, w.Set)
	c := find(t, rep, pins.KeyGatewayImage, "digest")
	if c.OK || !strings.Contains(c.Detail, "401 Unauthorized") || !strings.Contains(c.Detail, "docker login "+w.Reg.Host) {
		t.Errorf("without credentials: %+v", c)
	}
	if n := rep.Misses(); n != 7*2 {
		t.Errorf("%d misses without credentials, want 14 (digest and tag of 7 images)", n)
	}

	onlinetest.IsolateDockerConfig(t, map[string][2]string{w.Reg.Host: {user, pass}})
	rep = verify(t, w.Set)
	if m := misses(rep); len(m) > 0 {
		t.Fatalf("with the docker config's credentials:\n%s", strings.Join(m, "\n"))
	}
	doc, _ := json.Marshal(rep)
	if strings.Contains(string(doc), pass) {
		t.Errorf("a check carries the password: %s", doc)
	}
}
