package online

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online/onlinetest"
)

const (
	newVersion = "0.1.5"
	newCommit  = onlinetest.ReleaseCommit
	newArchive = "/NVIDIA/OpenShell/archive/refs/tags/v0.1.5.tar.gz"
)

func resolve(t *testing.T, o ResolveOptions) (*Resolved, error) {
	t.Helper()
	return Resolve(context.Background(), o, Deps{})
}

// Moving to a new release is one command: resolve reads 0.1.5's archive and images and writes a
// pin file that pins.Parse accepts, that keeps every other pin, drops the notes about the old
// release, is never written over an existing file by accident — and that verify then passes.
func TestResolveWritesTheSetOfAnotherRelease(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	archive, digests := w.Release(t, newVersion, newCommit, onlinetest.ChartFiles())

	res, err := resolve(t, ResolveOptions{Base: w.Set, Version: "v" + newVersion})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	o := res.Set.OpenShell
	if o.Version != newVersion || o.Commit != newCommit || res.CommitSource != "the archive's pax global header" {
		t.Errorf("version %q commit %q from %q", o.Version, o.Commit, res.CommitSource)
	}
	if o.SourceArchive.URL != w.Files.URL+newArchive || o.SourceArchive.SHA256 != onlinetest.SHA256(archive) || o.SourceArchive.TopDirectory != "OpenShell-0.1.5" ||
		res.Archive.Size != int64(len(archive)) {
		t.Errorf("archive pin %+v, size %d (want %d bytes, sha256 %s)", o.SourceArchive, res.Archive.Size, len(archive), onlinetest.SHA256(archive))
	}
	for key, img := range map[string]pins.Image{pins.KeyGatewayImage: o.Images.Gateway, pins.KeySandboxImage: o.Images.Sandbox, pins.KeySupervisorImage: o.Images.Supervisor} {
		if img.Tag != newCommit || img.Digest != digests[key] || img.Registry != w.Reg.Host {
			t.Errorf("%s = %s, want tag %s and index digest %s", key, img, newCommit, digests[key])
		}
	}
	if res.Set.K3s != w.Set.K3s || res.Set.K3d != w.Set.K3d || res.Set.OCE != w.Set.OCE || res.Set.AgentSandbox != w.Set.AgentSandbox || o.Charts != w.Set.OpenShell.Charts {
		t.Errorf("the other pins changed")
	}
	if len(res.DroppedNotes) != 1 || res.DroppedNotes[0].Pin != pins.KeyOpenShell || len(res.Set.Notes) != 2 || res.Set.Notes[0].Pin != pins.KeyK3dToolsImage || res.Set.Notes[1].Pin != pins.KeyRouting {
		t.Errorf("notes: dropped %+v, kept %+v; want the release's note dropped and the k3d tools and routing notes kept", res.DroppedNotes, res.Set.Notes)
	}
	if !reflect.DeepEqual(res.Set.Routing, w.Set.Routing) {
		t.Errorf("the routing pins changed: %+v", res.Set.Routing)
	}
	if strings.Join(res.Kept, ",") != "openshell.charts.gateway,openshell.charts.workspace,k3s.image,k3d.toolsImage,agentSandbox.manifest,routing,routing.certManager.manifest,routing.certManager.images,routing.envoyGateway.manifest,routing.envoyGateway.images,oce.nodeBaseImage,oce.postgresImage" {
		t.Errorf("kept %v", res.Kept)
	}

	data, err := res.Encode(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !strings.HasPrefix(string(data), "# Pinned artifacts for occ dev up: OpenShell 0.1.5 (commit "+newCommit+")") || !strings.Contains(string(data), "2026-12-01 from test pins") {
		t.Errorf("the file does not say what it pins:\n%s", data)
	}
	if !strings.Contains(string(data), "\nopenshell:\n  version: 0.1.5\n") {
		t.Errorf("the file is not in pin file order:\n%s", data)
	}
	out := filepath.Join(t.TempDir(), "pins-0.1.5.yaml")
	if err := pins.WriteFile(out, data, false); err != nil {
		t.Fatal(err)
	}
	if err := pins.WriteFile(out, []byte("other"), false); !errors.As(err, new(*pins.ExistsError)) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second write without replace: %v", err)
	}
	if err := pins.WriteFile(out, data, true); err != nil {
		t.Errorf("replace: %v", err)
	}
	loaded, err := pins.Load(out)
	if err != nil {
		t.Fatalf("the written pin file does not load: %v", err)
	}
	if loaded.OpenShell != res.Set.OpenShell || len(loaded.Notes) != 2 || !reflect.DeepEqual(loaded.Routing, res.Set.Routing) {
		t.Errorf("loaded %+v", loaded.OpenShell)
	}
	rep := verify(t, loaded)
	if m := misses(rep); len(m) > 0 {
		t.Errorf("verify of the resolved set:\n%s", strings.Join(m, "\n"))
	}
}

// An archive made by another tool carries no pax comment: resolve asks for --commit, uses it
// when given, and refuses a --commit that contradicts an archive that does carry one.
func TestResolveTakesTheCommitFromTheArchiveOrTheFlag(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	w.Release(t, newVersion, "", onlinetest.ChartFiles())
	_, err := resolve(t, ResolveOptions{Base: w.Set, Version: newVersion})
	var opt *option.Error
	if !errors.As(err, &opt) || opt.Option != OptionCommit || !strings.Contains(err.Error(), "no pax global header comment") {
		t.Fatalf("without a pax comment and --commit: %v", err)
	}
	res, err := resolve(t, ResolveOptions{Base: w.Set, Version: newVersion, Commit: newCommit})
	if err != nil || res.CommitSource != OptionCommit || res.Set.OpenShell.Commit != newCommit {
		t.Fatalf("with --commit: %v (%+v)", err, res)
	}

	w.Release(t, newVersion, newCommit, onlinetest.ChartFiles())
	_, err = resolve(t, ResolveOptions{Base: w.Set, Version: newVersion, Commit: strings.Repeat("a", 40)})
	if !errors.As(err, &opt) || !strings.Contains(err.Error(), "disagrees with the commit "+newCommit) {
		t.Fatalf("contradicting --commit: %v", err)
	}
}

// A release whose supervisor is published for x86-64 only and whose sandbox image was never
// pushed cannot be pinned: resolve refuses, naming both images, what is wrong and the fix.
func TestResolveRefusesAnImageWithoutAPlatformOrATag(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	w.Files.Put(newArchive, onlinetest.TagArchive(t, "OpenShell-"+newVersion, newCommit, onlinetest.ChartFiles()))
	w.Reg.PushIndex(t, "nvidia/openshell/gateway:"+newCommit, onlinetest.AMD64, onlinetest.ARM64)
	w.Reg.PushImage(t, "nvidia/openshell/supervisor:"+newCommit, onlinetest.AMD64)

	_, err := resolve(t, ResolveOptions{Base: w.Set, Version: newVersion})
	if err == nil {
		t.Fatal("Resolve accepted the release")
	}
	msg := err.Error()
	for _, want := range []string{
		"cannot pin OpenShell 0.1.5",
		"openshell.images.sandbox: image " + w.Reg.Host + "/nvidia/openshell/sandbox:" + newCommit + " does not exist",
		"tagged by its commit",
		"openshell.images.supervisor: image " + w.Reg.Host + "/nvidia/openshell/supervisor:" + newCommit + " is a single-platform manifest",
		"without linux/arm64",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "openshell.images.gateway") {
		t.Errorf("the gateway, which is fine, is named:\n%s", msg)
	}
}

// A release that moved its charts: resolve refuses, naming the chart key, the Chart.yaml it
// looked for and the charts the archive does hold.
func TestResolveRefusesAMovedChart(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	files := onlinetest.ChartFiles()
	delete(files, "deploy/helm/openshell-workspace/Chart.yaml")
	files["deploy/helm/workspace/Chart.yaml"] = "apiVersion: v2\nname: openshell-workspace\nversion: 0.2.0\n"
	w.Release(t, newVersion, newCommit, files)
	_, err := resolve(t, ResolveOptions{Base: w.Set, Version: newVersion})
	if err == nil || !strings.Contains(err.Error(), "openshell.charts.workspace: the archive has no OpenShell-0.1.5/deploy/helm/openshell-workspace/Chart.yaml") ||
		!strings.Contains(err.Error(), "charts under OpenShell-0.1.5/deploy/helm: deploy/helm/openshell, deploy/helm/workspace") {
		t.Fatalf("moved chart: %v", err)
	}
}

// Mistyped options are refused before anything is fetched, naming the flag; a release that does
// not exist names the archive's answer.
func TestResolveRefusesBadOptionsAndUnknownReleases(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	before := w.Reg.Requests()
	for _, c := range []struct {
		o    ResolveOptions
		flag string
	}{
		{ResolveOptions{Version: "latest"}, OptionVersion},
		{ResolveOptions{Version: "0.1.5", Commit: "5a5e0c1"}, OptionCommit},
		{ResolveOptions{Version: "0.1.5", Images: map[string]string{pins.KeyK3sImage: "Rancher/K3s"}}, "--k3s-image"},
		{ResolveOptions{Version: "0.1.5", Images: map[string]string{pins.KeyOCEPostgresImage: "postgres"}}, "--postgres-image"},
		{ResolveOptions{Version: "0.1.5", Images: map[string]string{pins.KeyGatewayImage: "x:1"}}, pins.KeyGatewayImage},
		{ResolveOptions{Version: "0.1.5", AgentSandboxVersion: "v0.6.0/../../x"}, OptionAgentSandbox},
	} {
		c.o.Base = w.Set
		_, err := resolve(t, c.o)
		var opt *option.Error
		if !errors.As(err, &opt) || opt.Option != c.flag {
			t.Errorf("%+v: %v, want an option error naming %s", c.o, err, c.flag)
		}
	}
	if w.Reg.Requests() != before || w.Files.Hits() != 0 {
		t.Errorf("bad options reached the network: %d registry requests, file hits %v", w.Reg.Requests()-before, w.Files.Hits())
	}
	_, err := resolve(t, ResolveOptions{Base: w.Set, Version: "0.1.9"})
	if err == nil || !strings.Contains(err.Error(), "v0.1.9.tar.gz: the server answered 404 Not Found") || !strings.Contains(err.Error(), "its tag is v0.1.9") {
		t.Fatalf("unknown release: %v", err)
	}
}

// The new release also moves k3s and Agent Sandbox: --k3s-image by tag is resolved to the index
// that tag serves, a k3d tools image replaced by an index drops the note about the old digest,
// and the Agent Sandbox manifest of 0.6.0 is found by the pinned URL's pattern and checksummed.
func TestResolveReplacesOtherImagesWhenTold(t *testing.T) {
	onlinetest.IsolateDockerConfig(t, nil)
	w := onlinetest.NewWorld(t, "", "")
	w.Release(t, newVersion, newCommit, onlinetest.ChartFiles())
	k3s, _ := w.Reg.PushIndex(t, "rancher/k3s:v1.37.1-k3s1", onlinetest.AMD64, onlinetest.ARM64)
	tools, _ := w.Reg.PushIndex(t, "k3d-io/k3d-tools:5.9.1", onlinetest.AMD64, onlinetest.ARM64)
	manifest := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: agent-sandbox-system\n# 0.6.0\n")
	manifestURL := w.Files.Put("/kubernetes-sigs/agent-sandbox/releases/download/v0.6.0/sandbox.yaml", manifest)
	res, err := resolve(t, ResolveOptions{Base: w.Set, Version: newVersion, AgentSandboxVersion: "0.6.0", Images: map[string]string{
		pins.KeyK3sImage:      w.Reg.Host + "/rancher/k3s:v1.37.1-k3s1",
		pins.KeyK3dToolsImage: w.Reg.Host + "/k3d-io/k3d-tools:5.9.1@" + tools,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Set.K3s.Image.String(); got != w.Reg.Host+"/rancher/k3s:v1.37.1-k3s1@"+k3s {
		t.Errorf("k3s %s", got)
	}
	if got := res.Set.K3d.ToolsImage.Digest; got != tools {
		t.Errorf("tools digest %s", got)
	}
	if a := res.Set.AgentSandbox; a.Version != "v0.6.0" || a.Manifest.URL != manifestURL || a.Manifest.SHA256 != onlinetest.SHA256(manifest) {
		t.Errorf("agent sandbox %+v, want v0.6.0 at %s", a, manifestURL)
	}
	if slices.Contains(res.Kept, pins.KeyAgentSandbox) || slices.Contains(res.Kept, pins.KeyK3sImage) || !slices.Contains(res.Kept, pins.KeyOCEPostgresImage) {
		t.Errorf("kept %v", res.Kept)
	}
	if len(res.Set.Notes) != 1 || res.Set.Notes[0].Pin != pins.KeyRouting || len(res.DroppedNotes) != 2 {
		t.Errorf("notes kept %+v, dropped %+v", res.Set.Notes, res.DroppedNotes)
	}
	if _, err := res.Encode(time.Now()); err != nil {
		t.Errorf("Encode: %v", err)
	}
}
