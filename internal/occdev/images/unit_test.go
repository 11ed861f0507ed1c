package images

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

func mustPin(t *testing.T, ref string) pins.Image {
	t.Helper()
	img, err := pins.ParseImage(ref)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	digestC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

// Docker writes RepoDigests in its short form; a pulled pinned image is accepted in every form
// the engine uses, and a re-tagged image is refused naming the pin, its ID and both digests.
func TestCheckRepoDigest(t *testing.T) {
	cases := []struct {
		pin, repoDigest string
	}{
		{"docker.io/rancher/k3s:v1.36.4-k3s1@" + digestA, "rancher/k3s@" + digestA},
		{"docker.io/library/busybox@" + digestA, "busybox@" + digestA},
		{"ghcr.io/nvidia/openshell/gateway:abc@" + digestA, "ghcr.io/nvidia/openshell/gateway@" + digestA},
		{"127.0.0.1:5000/bed/gateway:t@" + digestA, "127.0.0.1:5000/bed/gateway@" + digestA},
	}
	for _, c := range cases {
		l := Local{Pin: mustPin(t, c.pin), ID: digestC, RepoDigests: []string{"other/repo@" + digestB, c.repoDigest}}
		if err := CheckRepoDigest(l); err != nil {
			t.Errorf("CheckRepoDigest(%s with %s) = %v", c.pin, c.repoDigest, err)
		}
	}
	refused := []Local{
		// Same name, another digest: the tag was pointed at other content.
		{Pin: mustPin(t, "ghcr.io/nvidia/openshell/gateway:abc@"+digestA), ID: digestC, RepoDigests: []string{"ghcr.io/nvidia/openshell/gateway@" + digestB}},
		// Same digest under another name is not the pinned image either.
		{Pin: mustPin(t, "ghcr.io/nvidia/openshell/gateway:abc@"+digestA), ID: digestC, RepoDigests: []string{"ghcr.io/evil/gateway@" + digestA}},
		// Loaded from a tarball or built locally: no RepoDigests at all.
		{Pin: mustPin(t, "ghcr.io/nvidia/openshell/gateway:abc@"+digestA), ID: digestC},
	}
	for _, l := range refused {
		err := CheckRepoDigest(l)
		var rd *RepoDigestError
		if !errors.As(err, &rd) {
			t.Fatalf("CheckRepoDigest(%v) = %v, want a RepoDigestError", l.RepoDigests, err)
		}
		for _, w := range []string{"ghcr.io/nvidia/openshell/gateway:abc", digestA, digestC, "docker rmi"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	}
}

// A controller built from the checkout has no RepoDigests: it passes only as a built image whose
// stand-in pin is its own config digest; one whose ID moved since (a rebuild under the same
// tag between the build and the import) is refused.
func TestCheckRepoDigestOfABuiltImage(t *testing.T) {
	built := Local{Pin: mustPin(t, "docker.io/library/openclaw-enterprise-controller:kubernetes-quickstart@"+digestC), ID: digestC, Built: true}
	if err := CheckRepoDigest(built); err != nil {
		t.Errorf("a built image = %v", err)
	}
	moved := built
	moved.ID = digestB
	if err := CheckRepoDigest(moved); err == nil || !strings.Contains(err.Error(), "changed after the build") {
		t.Errorf("a built image whose ID moved = %v", err)
	}
	unbuilt := built
	unbuilt.Built = false
	var rd *RepoDigestError
	if err := CheckRepoDigest(unbuilt); !errors.As(err, &rd) {
		t.Errorf("the same image not marked built = %v, want a RepoDigestError", err)
	}
}

// ctr prints a header and SIZE with a space in it; the parser takes name, type and digest and
// refuses output it does not understand rather than guessing.
func TestParseImageList(t *testing.T) {
	out := `REF                                                      TYPE                                                 DIGEST                                                                  SIZE     PLATFORMS   LABELS
occ.local/import/gateway-1a2b3c4d:occ-dev-x              application/vnd.docker.distribution.manifest.v2+json ` + digestA + ` 2.1 MiB  linux/amd64 -
ghcr.io/nvidia/openshell/gateway@` + digestB + ` application/vnd.oci.image.index.v1+json ` + digestC + ` 12.0 KiB linux/amd64 io.cri-containerd.image=managed
`
	imgs, err := parseImageList(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 || imgs[0].Name != "occ.local/import/gateway-1a2b3c4d:occ-dev-x" || imgs[0].Digest != digestA ||
		imgs[1].MediaType != "application/vnd.oci.image.index.v1+json" || imgs[1].Digest != digestC {
		t.Fatalf("parsed %+v", imgs)
	}
	if imgs, err := parseImageList("REF TYPE DIGEST SIZE PLATFORMS LABELS\n"); err != nil || len(imgs) != 0 {
		t.Fatalf("empty list = %v, %v", imgs, err)
	}
	if _, err := parseImageList("REF TYPE DIGEST\nsomething broken\n"); err == nil {
		t.Fatal("garbage accepted")
	}
}

// Staging tags are valid references, unique per pinned image and cluster, and never under
// docker.io (so containerd keeps exactly that name).
func TestStagingTag(t *testing.T) {
	a := mustPin(t, "ghcr.io/nvidia/openshell/gateway:x@"+digestA)
	b := mustPin(t, "ghcr.io/other/gateway:x@"+digestA)
	ta, tb := StagingTag(a, "occ-dev-abc"), StagingTag(b, "occ-dev-abc")
	if ta == tb {
		t.Fatalf("two pins share staging tag %s", ta)
	}
	if StagingTag(a, "occ-dev-abc") == StagingTag(a, "occ-dev-def") {
		t.Fatal("two clusters share a staging tag")
	}
	img, err := pins.ParseImage(ta)
	if err != nil {
		t.Fatalf("staging tag %s does not parse: %v", ta, err)
	}
	if img.Registry != "occ.local" || img.Tag != "occ-dev-abc" || !strings.HasPrefix(img.Repository, "import/gateway-") {
		t.Fatalf("staging tag %s parsed as %+v", ta, img)
	}
}

// A hold is a tag under occ.local/build/ named after the built repository and the environment:
// its cluster, or the state's owner when the cluster's name is no tag (or there is none), so two
// environments never share one, and each role's build has its own. The state accepts its record
// with and without the image ID, and refuses a name outside occ's namespace.
func TestHoldTag(t *testing.T) {
	created := time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)
	env := func(cluster string) state.State {
		return state.State{Cluster: state.Cluster{Provider: "k3d", Name: cluster}, CreatedAt: created}
	}
	runtime := "openclaw-enterprise-runtime:kubernetes-quickstart"
	for _, c := range []struct {
		built string
		st    state.State
		want  string
	}{
		{runtime, env("occ-dev-abc"), "occ.local/build/openclaw-enterprise-runtime:occ-dev-abc"},
		{"openclaw-enterprise-controller:kubernetes-quickstart", env("occ-dev-abc"), "occ.local/build/openclaw-enterprise-controller:occ-dev-abc"},
		{"registry.example:5000/team/runtime:dev", env("occ-dev-abc"), "occ.local/build/runtime:occ-dev-abc"},
		{runtime, env(""), "occ.local/build/openclaw-enterprise-runtime:env-" + env("").Owner()},
		{runtime, env("arn:aws:eks:eu-west-1:1:cluster/x"), "occ.local/build/openclaw-enterprise-runtime:env-" + env("").Owner()},
	} {
		got, err := HoldTag(c.built, c.st)
		if err != nil || got != c.want {
			t.Errorf("HoldTag(%s, cluster %q) = %q, %v; want %q", c.built, c.st.Cluster.Name, got, err, c.want)
			continue
		}
		if err := checkHold(HoldRecord(got, "")); err != nil {
			t.Errorf("the record of %s before its build: %v", got, err)
		}
		if err := checkHold(HoldRecord(got, digestA)); err != nil {
			t.Errorf("the record of %s after its build: %v", got, err)
		}
	}
	other := env("occ-dev-def")
	other.CreatedAt = created.Add(time.Second)
	a, _ := HoldTag(runtime, env(""))
	if b, _ := HoldTag(runtime, other); a == b {
		t.Errorf("two environments share the hold %s", a)
	}
	if _, err := HoldTag("not a reference", env("x")); err == nil {
		t.Error("a built image that is no reference was given a hold")
	}
	for _, bad := range []state.Object{
		HoldRecord("openclaw-enterprise-runtime:kubernetes-quickstart", ""),
		HoldRecord("occ.local/build/runtime@"+digestA, ""),
		HoldRecord("occ.local/build/runtime:x", "abc"),
	} {
		if err := checkHold(bad); err == nil {
			t.Errorf("the hold record %+v was accepted", bad)
		}
	}
}

// A pull of two layers reports one running total for the step's progress line; an extracting
// phase (which counts the same bytes again) does not push the total past the size.
func TestTotals(t *testing.T) {
	var got [][2]int64
	f := Totals(func(done, total int64) { got = append(got, [2]int64{done, total}) })
	for _, ev := range []Event{
		{Status: "pulling"},
		{Layer: "a", Status: "Pulling fs layer"},
		{Layer: "b", Status: "Already exists"},
		{Layer: "a", Status: "Downloading", Current: 10, Total: 100},
		{Layer: "a", Status: "Downloading", Current: 60, Total: 100},
		{Layer: "a", Status: "Download complete"},
		{Layer: "a", Status: "Extracting", Current: 5, Total: 100},
		{Layer: "a", Status: "Pull complete"},
	} {
		f(ev)
	}
	last := got[len(got)-1]
	if last != [2]int64{100, 100} || got[2] != [2]int64{10, 100} || got[3] != [2]int64{60, 100} || got[5] != [2]int64{100, 100} {
		t.Fatalf("totals = %v", got)
	}
}

// The downloads of a pull are done once every announced layer's bytes are in, extracting or
// not; a layer the engine already had counts as in, but cannot end the wait before a download has
// completed (the layers after it may not be announced yet); it fires once, and never for progress
// that names no layers.
func TestDownloadsDone(t *testing.T) {
	run := func(evs []Event) int {
		fired, calls := -1, 0
		at := 0
		f := DownloadsDone(func() { calls++; fired = at })
		for i, ev := range evs {
			at = i
			f(ev)
		}
		if calls > 1 {
			t.Errorf("done called %d times", calls)
		}
		return fired
	}
	two := []Event{
		{Status: "pulling"},
		{Layer: "registry/repo@sha256:x", Status: "Pulling from repo"},
		{Layer: "b", Status: "Already exists"},
		{Layer: "a", Status: "Pulling fs layer"},
		{Layer: "c", Status: "Pulling fs layer"},
		{Layer: "a", Status: "Downloading", Current: 10, Total: 100},
		{Layer: "c", Status: "Waiting"},
		{Layer: "a", Status: "Download complete"},
		{Layer: "a", Status: "Extracting", Current: 5, Total: 100},
		{Layer: "c", Status: "Downloading", Current: 1, Total: 10},
		{Layer: "c", Status: "Verifying Checksum"},
		{Layer: "c", Status: "Download complete"},
		{Layer: "a", Status: "Pull complete"},
		{Layer: "c", Status: "Extracting", Current: 5, Total: 10},
		{Layer: "c", Status: "Pull complete"},
		{Status: "pulled"},
	}
	if got := run(two); got != 11 {
		t.Errorf("the downloads of two layers were done at event %d, want 11 (c's download complete, a still extracting)", got)
	}
	if got := run(two[:3]); got != -1 {
		t.Errorf("a layer that was already there ended the wait at event %d before any download completed", got)
	}
	if got := run([]Event{{Status: "pulling"}, {Status: "Copying blob"}, {Status: "pulled"}}); got != -1 {
		t.Errorf("progress without layers ended the wait at event %d", got)
	}
}

// An image occ built from the checkout has no RepoDigests: it is accepted on its image ID, which
// its pin carries, and refused when the tag was moved to another build in between.
func TestCheckRepoDigestOfBuiltImage(t *testing.T) {
	built := Local{Pin: mustPin(t, "openclaw-enterprise-runtime@"+digestA), ID: digestA, Built: true}
	if err := CheckRepoDigest(built); err != nil {
		t.Fatalf("built image refused: %v", err)
	}
	built.ID = digestB
	if err := CheckRepoDigest(built); err == nil || !strings.Contains(err.Error(), digestB) || !strings.Contains(err.Error(), "run occ dev up again") {
		t.Fatalf("a moved build tag: got %v, want a refusal naming the engine's image", err)
	}
	notBuilt := Local{Pin: mustPin(t, "openclaw-enterprise-runtime@"+digestA), ID: digestA}
	var rde *RepoDigestError
	if err := CheckRepoDigest(notBuilt); !errors.As(err, &rde) {
		t.Fatalf("an image without RepoDigests that was not built by occ: got %v, want RepoDigestError", err)
	}
}

// A pull into either engine is recorded under the one type of a pulled image and described by
// the name of the engine it went into; RemovePulledImage undoes it, and nothing else.
func TestPulledRecordsNameTheirEngine(t *testing.T) {
	pin := mustPin(t, "ghcr.io/nvidia/openshell/gateway@"+digestA)
	for engine, want := range map[string]string{"": "Docker image ", "Docker": "Docker image ", "Podman": "Podman image "} {
		rec := pulledRecord(pin, "", engine)
		if got := rec.String(); got != want+"ghcr.io/nvidia/openshell/gateway@"+digestA {
			t.Errorf("engine %q: the record is described %q", engine, got)
		}
		if rec.Type != TypePulledImage {
			t.Errorf("engine %q: a pull is recorded as %s", engine, rec.Type)
		}
		if k, ok := state.KindOf(rec.Type); !ok {
			t.Errorf("engine %q: type %s is not registered", engine, rec.Type)
		} else if !k.Fields.Engine {
			t.Errorf("engine %q: type %s does not record its engine", engine, rec.Type)
		} else if err := k.Check(rec); err != nil {
			t.Errorf("engine %q: %v", engine, err)
		}
	}
	_, err := RemovePulledImage(t.Context(), nil, state.Object{Type: TypeClusterImage, Name: pin.Name(), Digest: pin.Digest})
	if err == nil || !strings.Contains(err.Error(), "is not a pulled-image record") {
		t.Errorf("RemovePulledImage of a cluster image: %v", err)
	}
}

// A dry run names an image selected by tag as the tag it resolves, and one by digest by its
// digest; the run's own images travel into the node's containerd with their own notes kept.
func TestDryRunItems(t *testing.T) {
	tagged, pinned := mustPin(t, "rancher/k3s:v1.33.1-k3s1"), mustPin(t, "rancher/k3s@"+digestA)
	if got := PullItem(tagged, "the Docker engine", false, "SETTING"); got.Reference != tagged.String() || !strings.HasPrefix(got.Note, "a tag (SETTING): ") {
		t.Errorf("by tag: %+v", got)
	}
	if got, want := PullItem(pinned, "the Docker engine", true, "SETTING"), PresentItem(pinned, "the Docker engine", true); got != want {
		t.Errorf("by digest: %+v, want %+v", got, want)
	}
	own := []step.Image{{Reference: "agent:dev", Note: "built"}, {Reference: "other:dev"}}
	d := DescribeOwnImport(own)
	if len(d.Images) != 2 || d.Images[0].Where != InNodeContainerd || d.Images[0].Note != "built; imported" || d.Images[1].Note != "imported" || own[0].Note != "built" {
		t.Errorf("own import: %+v", d)
	}
	if d := DescribeOwnVerify(own); len(d.Images) != 2 || d.Images[1].Note != "named in the node for its Pods" || d.Note == "" {
		t.Errorf("own verify: %+v", d)
	}
}
