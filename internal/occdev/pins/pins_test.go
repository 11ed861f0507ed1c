package pins

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/option"
)

// The binary ships the complete, reviewed v0.1.3-pre.2 set; a typo in any value must fail here.
func TestDefaultIsTheCompletePre1Set(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	o := set.OpenShell
	checks := map[string][2]string{
		"version":         {o.Version, "0.1.3-pre.2"},
		"commit":          {o.Commit, "021400be8af471f8669369e679de3e18cf0bd672"},
		"archive url":     {o.SourceArchive.URL, "https://github.com/NVIDIA/OpenShell/archive/refs/tags/v0.1.3-pre.2.tar.gz"},
		"archive sha256":  {o.SourceArchive.SHA256, "77afc69ad28e55f11a05cbc68d6dc5a6cc5c989a68d0f9d55ae0868af2b3f476"},
		"top directory":   {o.SourceArchive.TopDirectory, "OpenShell-0.1.3-pre.2"},
		"helm directory":  {o.SourceArchive.HelmDirectory, "deploy/helm"},
		"gateway chart":   {o.Charts.Gateway, "deploy/helm/openshell"},
		"workspace chart": {o.Charts.Workspace, "deploy/helm/openshell-workspace"},
		"gateway image":   {o.Images.Gateway.String(), "ghcr.io/nvidia/openshell/gateway:021400be8af471f8669369e679de3e18cf0bd672@sha256:17b2f65d1e33f32a419ecc98dd42389b0227280be54139c14834933ec29420ea"},
		"sandbox image":   {o.Images.Sandbox.String(), "ghcr.io/nvidia/openshell/sandbox:021400be8af471f8669369e679de3e18cf0bd672@sha256:b46ed57b080946d0fe80490dbe1441ebf4a83c6eec79369ddbcfc49ec19dc0cf"},
		"supervisor":      {o.Images.Supervisor.String(), "ghcr.io/nvidia/openshell/supervisor:021400be8af471f8669369e679de3e18cf0bd672@sha256:971d71f45f677a7b1084385322bae4ac6fd09e9450e680684ab79a04d07c5c9f"},
		"k3s":             {set.K3s.Image.String(), "docker.io/rancher/k3s:v1.36.4-k3s1@sha256:edad48e12bf81c3a09ac1c05c0c0ffaaa22145980b989d6fae84543a76b83657"},
		"k3d tools":       {set.K3d.ToolsImage.String(), "ghcr.io/k3d-io/k3d-tools:5.9.0@sha256:f18c1e21aba123fe6ff315c514a0feffc005f587aa3db773e89489c2118842dd"},
		"agent sandbox":   {set.AgentSandbox.Manifest.URL, "https://github.com/kubernetes-sigs/agent-sandbox/releases/download/v0.5.2/sandbox.yaml"},
		"agent sha256":    {set.AgentSandbox.Manifest.SHA256, "230ee446d6035f631577e1c6b857f6973a8f09a0a853675d3cc34ebfe47abd6b"},
		"node base":       {set.OCE.NodeBaseImage.String(), "docker.io/library/node:24-bookworm@sha256:3d27e5c11e5786e309ec3e03f93ae536eb36e6e5eb3714d5eb3300a36157add0"},
		"postgres":        {set.OCE.PostgresImage.String(), "docker.io/library/postgres:18.6@sha256:86c951e05bf56c93d95d397747fb8820ac76cc3bedb78f43abd83eedbe3666ae"},
		"source":          {set.Source, EmbeddedSource},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
	if got := o.Images.Gateway; got.Registry != "ghcr.io" || got.Repository != "nvidia/openshell/gateway" || got.Digest != "sha256:17b2f65d1e33f32a419ecc98dd42389b0227280be54139c14834933ec29420ea" {
		t.Errorf("gateway image split = %+v", got)
	}
}

// An engineer points OCC_DEVELOPMENT_PIN_FILE at a copy of the default file to try a new build.
func TestLoadOverrideFile(t *testing.T) {
	data := strings.Replace(string(embedded), "version: 0.1.3-pre.2", "version: 0.1.3-pre.9", 1)
	p := filepath.Join(t.TempDir(), "pins.yaml")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := Resolve(p)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if set.OpenShell.Version != "0.1.3-pre.9" || set.Source != p {
		t.Fatalf("got version %q source %q", set.OpenShell.Version, set.Source)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "OCC_DEVELOPMENT_PIN_FILE") {
		t.Fatalf("missing file error = %v, want a hint naming OCC_DEVELOPMENT_PIN_FILE", err)
	}
}

// Hand-edited pin files go wrong in predictable ways; each must be refused naming the key.
func TestParseRefusesBadPins(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"short sha256", "sha256: 77afc69ad28e55f11a05cbc68d6dc5a6cc5c989a68d0f9d55ae0868af2b3f476", "sha256: b140c4", "openshell.sourceArchive.sha256"},
		{"upper-case sha256", "sha256: 230ee446d6035f631577e1c6b857f6973a8f09a0a853675d3cc34ebfe47abd6b", "sha256: 230EE446D6035F631577E1C6B857F6973A8F09A0A853675D3CC34EBFE47ABD6B", "agentSandbox.manifest.sha256"},
		{"image without digest", "gateway:021400be8af471f8669369e679de3e18cf0bd672@sha256:17b2f65d1e33f32a419ecc98dd42389b0227280be54139c14834933ec29420ea", "gateway:latest", "openshell.images.gateway"},
		{"bad digest", "@sha256:971d71f45f677a7b1084385322bae4ac6fd09e9450e680684ab79a04d07c5c9f", "@sha256:406d", "openshell.images.supervisor"},
		{"tools image by tag only", "k3d-tools:5.9.0@sha256:f18c1e21aba123fe6ff315c514a0feffc005f587aa3db773e89489c2118842dd", "k3d-tools:latest", "k3d.toolsImage"},
		{"tools image missing", "  toolsImage: ghcr.io/k3d-io/k3d-tools:5.9.0@sha256:f18c1e21aba123fe6ff315c514a0feffc005f587aa3db773e89489c2118842dd", "", "k3d.toolsImage"},
		{"upper-case repository", "ghcr.io/nvidia/openshell/sandbox", "ghcr.io/NVIDIA/openshell/sandbox", "openshell.images.sandbox"},
		{"unknown key", "schemaVersion: 1", "schemaVersion: 1\nextra: true", `extra (line 6, value "extra"): unknown key "extra" in the top level`},
		{"duplicate key", "schemaVersion: 1", "schemaVersion: 1\nschemaVersion: 1", "the key appears more than once"},
		{"future schema", "schemaVersion: 1", "schemaVersion: 2", "schemaVersion is 2"},
		{"chart outside helm dir", "gateway: deploy/helm/openshell", "gateway: deploy/other/openshell", "openshell.charts.gateway"},
		{"chart escaping", "workspace: deploy/helm/openshell-workspace", "workspace: ../etc", "openshell.charts.workspace"},
		{"top directory with slash", "topDirectory: OpenShell-0.1.3-pre.2", "topDirectory: a/b", "topDirectory"},
		{"version with v", "version: 0.1.3-pre.2", "version: v0.1.3-pre.2", "openshell.version"},
		{"ftp url", "url: https://github.com/kubernetes-sigs", "url: ftp://github.com/kubernetes-sigs", "agentSandbox.manifest.url"},
		{"postgres by tag", "postgres:18.6@sha256:86c951e05bf56c93d95d397747fb8820ac76cc3bedb78f43abd83eedbe3666ae", "postgres:18.6", "oce.postgresImage"},
		{"note about an unknown pin", "  - pin: k3d.toolsImage", "  - pin: k3d.tools", "notes[1].pin \"k3d.tools\" is not a pin of the set"},
		{"unknown key in a note", "  - pin: k3d.toolsImage\n    text: >-", "  - pin: k3d.toolsImage\n    txt: ''\n    text: >-", `notes[1].txt (line 63, value "txt"): unknown key "txt" in notes[1]`},
		{"note without text", "  - pin: k3d.toolsImage\n    text: >-", "  - pin: k3d.toolsImage\n    text: ' '\n  - pin: k3s.image\n    text: >-", "notes[1].text is empty"},
		{"gateway chart as the workspace chart", "workspace: deploy/helm/openshell-workspace", "workspace: deploy/helm/openshell", `openshell.charts.workspace "deploy/helm/openshell" is openshell.charts.gateway too`},
		{"k3s without its release tag", "docker.io/rancher/k3s:v1.36.4-k3s1@sha256:", "docker.io/rancher/k3s@sha256:", "k3s.image \"docker.io/rancher/k3s@sha256:"},
		{"a list where a string goes", "version: 0.1.3-pre.2", "version: [0.1.3-pre.2]", "openshell.version (line 7, value \"<list>\"): must be a string"},
		{"node base missing", "  nodeBaseImage: docker.io/library/node:24-bookworm@sha256:3d27e5c11e5786e309ec3e03f93ae536eb36e6e5eb3714d5eb3300a36157add0\n", "", "oce.nodeBaseImage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := strings.Replace(string(embedded), c.old, c.new, 1)
			if data == string(embedded) {
				t.Fatalf("test case did not change the file (old %q not found)", c.old)
			}
			_, err := Parse([]byte(data), "test.yaml")
			if err == nil {
				t.Fatalf("Parse accepted the file")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "test.yaml") {
				t.Fatalf("error %q does not name %q and the file", err, c.want)
			}
		})
	}
}

// Helm values take registry, repository and digest separately; the parser must split the forms
// found in real pins and refuse malformed ones.
func TestParseImage(t *testing.T) {
	good := []struct {
		ref  string
		want Image
	}{
		{"ghcr.io/nvidia/openshell/gateway:abc@sha256:" + strings.Repeat("a", 64), Image{"ghcr.io", "nvidia/openshell/gateway", "abc", "sha256:" + strings.Repeat("a", 64)}},
		{"docker.io/rancher/k3s:v1.36.4-k3s1", Image{"docker.io", "rancher/k3s", "v1.36.4-k3s1", ""}},
		{"rancher/k3s", Image{"docker.io", "rancher/k3s", "", ""}},
		{"busybox", Image{"docker.io", "library/busybox", "", ""}},
		{"localhost:5000/x/y@sha256:" + strings.Repeat("0", 64), Image{"localhost:5000", "x/y", "", "sha256:" + strings.Repeat("0", 64)}},
		{"localhost/img:1", Image{"localhost", "img", "1", ""}},
	}
	for _, g := range good {
		got, err := ParseImage(g.ref)
		if err != nil {
			t.Errorf("ParseImage(%q): %v", g.ref, err)
			continue
		}
		if got != g.want {
			t.Errorf("ParseImage(%q) = %+v, want %+v", g.ref, got, g.want)
		}
	}
	if got, _ := ParseImage("ghcr.io/a/b:t@sha256:" + strings.Repeat("b", 64)); got.DigestReference() != "ghcr.io/a/b@sha256:"+strings.Repeat("b", 64) {
		t.Errorf("DigestReference = %q", got.DigestReference())
	}
	bad := []string{"", " ghcr.io/a", "ghcr.io/A/b", "ghcr.io/a/b:", "ghcr.io/a/b@sha256:xyz", "ghcr.io/a/b@md5:" + strings.Repeat("a", 32), "ghcr.io//b", "-bad.io/a/b", "ghcr.io/a/b:t:t2"}
	for _, ref := range bad {
		if img, err := ParseImage(ref); err == nil {
			t.Errorf("ParseImage(%q) accepted: %+v", ref, img)
		}
	}
}

// The tools image k3d starts must come from the k3d release occ links (go.mod): a tools image of
// another release may not understand what this library asks of it.
func TestToolsImageMatchesLinkedK3d(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join("..", "..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var linked string
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/k3d-io/k3d/v5" {
			linked = f[1]
		}
	}
	if linked == "" {
		t.Fatal("go.mod does not require github.com/k3d-io/k3d/v5")
	}
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := set.K3d.ToolsImage.Tag, strings.TrimPrefix(linked, "v"); got != want {
		t.Fatalf("k3d.toolsImage tag %q, want %q (go.mod links k3d %s): update pins.yaml with the digest of ghcr.io/k3d-io/k3d-tools:%s", got, want, linked, want)
	}
}

// The two facts a reader of the default set must know are notes beside their pins: the known
// defect of the pinned OpenShell line and the unsettled k3d tools digest.
func TestDefaultNotes(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string]string{}
	for _, e := range set.Entries() {
		notes[e.Key] = strings.Join(e.Notes, " ")
	}
	for key, wants := range map[string][]string{
		KeyOpenShell:     {"0.1.2 and 0.1.3-pre.1 to 0.1.3-pre.3", "#3994", "about 10 s after the Gateway starts", "0.1.3-pre.4", "#4122", "digests are not known", "retries its first idempotent calls"},
		KeyK3dToolsImage: {"f18c1e21aba123fe", "c57abce697e66fee", "single-platform manifest", "occ dev pins verify"},
	} {
		for _, want := range wants {
			if !strings.Contains(notes[key], want) {
				t.Errorf("the note of %s lacks %q: %q", key, want, notes[key])
			}
		}
	}
	if len(set.Notes) != 3 {
		t.Errorf("%d notes, want 3", len(set.Notes))
	}
}

// Every pin of a set is listed once, in pin file order, with the value a pin file writes.
func TestEntriesListEveryPin(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range set.Entries() {
		keys = append(keys, e.Key)
		if e.Value == "" {
			t.Errorf("%s has no value", e.Key)
		}
		if (e.Image != nil) == (e.Artifact != nil) && e.Image != nil {
			t.Errorf("%s is both an image and an artifact", e.Key)
		}
	}
	want := []string{KeyOpenShell, KeySourceArchive, KeyGatewayChart, KeyWorkspaceChart,
		KeyGatewayImage, KeySandboxImage, KeySupervisorImage,
		KeyK3sImage, KeyK3dToolsImage, KeyAgentSandbox,
		KeyRouting, KeyRoutingCertManager + ".manifest", KeyRoutingCertManager + ".images", KeyRoutingEnvoyGateway + ".manifest", KeyRoutingEnvoyGateway + ".images",
		KeyOCENodeBaseImage, KeyOCEPostgresImage}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("entries %v, want %v", keys, want)
	}
	for _, e := range set.Entries() {
		if e.Key == KeyGatewayImage && e.Value != set.OpenShell.Images.Gateway.String() {
			t.Errorf("gateway entry %q", e.Value)
		}
	}
}

// A written pin file is read back as the same set, keys in the embedded file's order, and a
// set that would not parse is never written.
func TestEncodeRoundTrip(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	data, err := Encode(set, "written by a test\nsecond line")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# written by a test\n# second line\nschemaVersion: 1\nopenshell:\n  version: 0.1.3-pre.2\n") {
		t.Errorf("encoded file starts:\n%s", data[:200])
	}
	back, err := Parse(data, "round trip")
	if err != nil {
		t.Fatal(err)
	}
	back.Source = set.Source
	if back.OpenShell != set.OpenShell || back.K3s != set.K3s || back.K3d != set.K3d || back.OCE != set.OCE || back.AgentSandbox != set.AgentSandbox || !reflect.DeepEqual(back.Routing, set.Routing) || len(back.Notes) != 3 || back.Notes[1] != set.Notes[1] {
		t.Errorf("round trip changed the set")
	}
	bad := *set
	bad.OpenShell.Commit = "abc"
	if _, err := Encode(&bad, ""); err == nil || !strings.Contains(err.Error(), "openshell.commit") {
		t.Errorf("Encode of an invalid set: %v", err)
	}
}

// The platform renders the Gateway chart from the OpenShell images alone, so every image the
// Gateway runs must be one of them, each named in the chart values by its own component.
func TestGatewayImagesAreOpenShellImages(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	all, of := set.GatewayImages(), GatewayImagesOf(set.OpenShell.Images)
	if len(all) == 0 || len(of) != len(all) {
		t.Fatalf("%d Gateway images of the set, %d of its OpenShell images", len(all), len(of))
	}
	components := map[string]bool{}
	for i, img := range all {
		if of[i].Key != img.Key || of[i].Image != img.Image {
			t.Errorf("Gateway image %s is %s in the set, %s in its OpenShell images", img.Key, img.Image, of[i].Image)
		}
		if img.Cluster || components[img.Gateway.Component] {
			t.Errorf("Gateway image %s: a cluster image, or its values component %q named twice", img.Key, img.Gateway.Component)
		}
		components[img.Gateway.Component] = true
	}
	for _, img := range set.ClusterImages() {
		if img.Gateway != nil || img.Image.Digest == "" {
			t.Errorf("cluster image %s: run by the Gateway, or without a digest", img.Key)
		}
	}
}

// The routing section is optional (a pin file written before it existed still loads, and
// routes nothing); its images are each pinned by the manifest's tag and a digest, and a set
// lists each image as its own entry under its controller's key.
func TestRoutingPins(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if set.Routing == nil || set.Routing.Resolved() || set.Routing.CertManager.Version != "v1.18.4" || set.Routing.EnvoyGateway.Manifest.SHA256 != "9a250c698d78b92c670d9d2bd6bd54615f1dee41ddd520ece9704edf63088df8" {
		t.Fatalf("embedded routing pins: %+v", set.Routing)
	}
	start := strings.Index(string(embedded), "routing:\n")
	end := strings.Index(string(embedded), "# The OCE control plane")
	without := string(embedded[:start]) + string(embedded[end:])
	without = without[:strings.Index(without, "  - pin: routing")]
	old, err := Parse([]byte(without), "old.yaml")
	if err != nil {
		t.Fatalf("a pin file without routing: %v", err)
	}
	if old.Routing != nil || old.Routing.Resolved() {
		t.Errorf("a pin file without routing has routing %+v", old.Routing)
	}

	digest := "@sha256:" + strings.Repeat("ab", 32)
	images := "    images:\n      - quay.io/jetstack/cert-manager-controller:v1.18.4" + digest + "\n      - quay.io/jetstack/cert-manager-webhook:v1.18.4" + digest + "\n"
	resolved := strings.Replace(string(embedded), "      sha256: aff085b4f0126f67372e3a02cb18feb70eed37dbd4de01973a159e6c13482f83\n", "      sha256: aff085b4f0126f67372e3a02cb18feb70eed37dbd4de01973a159e6c13482f83\n"+images, 1)
	resolved = strings.Replace(resolved, "      sha256: 9a250c698d78b92c670d9d2bd6bd54615f1dee41ddd520ece9704edf63088df8\n", "      sha256: 9a250c698d78b92c670d9d2bd6bd54615f1dee41ddd520ece9704edf63088df8\n    images: [docker.io/envoyproxy/gateway:v1.6.7"+digest+"]\n", 1)
	set, err = Parse([]byte(resolved), "resolved.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !set.Routing.Resolved() || len(set.Routing.CertManager.Images) != 2 || set.Routing.CertManager.Images[1].Repository != "jetstack/cert-manager-webhook" {
		t.Fatalf("resolved routing pins: %+v", set.Routing)
	}
	var imageEntries []string
	for _, e := range set.Entries() {
		if e.Image != nil && strings.HasPrefix(e.Key, KeyRouting+".") {
			imageEntries = append(imageEntries, e.Key+" "+e.Value)
		}
	}
	want := []string{KeyRoutingCertManager + ".images quay.io/jetstack/cert-manager-controller:v1.18.4" + digest,
		KeyRoutingCertManager + ".images quay.io/jetstack/cert-manager-webhook:v1.18.4" + digest,
		KeyRoutingEnvoyGateway + ".images docker.io/envoyproxy/gateway:v1.6.7" + digest}
	if !slices.Equal(imageEntries, want) {
		t.Errorf("routing image entries %q, want %q", imageEntries, want)
	}
	data, err := Encode(set, "")
	if err != nil {
		t.Fatal(err)
	}
	if back, err := Parse(data, "round trip"); err != nil || !reflect.DeepEqual(back.Routing, set.Routing) {
		t.Errorf("round trip of resolved routing pins: %v", err)
	}

	for _, c := range []struct{ name, old, new, want string }{
		{"an image by tag alone", "cert-manager-webhook:v1.18.4" + digest, "cert-manager-webhook:v1.18.4", `routing.certManager.images[1] "quay.io/jetstack/cert-manager-webhook:v1.18.4" has no digest`},
		{"an image by digest alone", "cert-manager-webhook:v1.18.4" + digest, "cert-manager-webhook" + digest, `routing.certManager.images[1] "quay.io/jetstack/cert-manager-webhook` + digest + `" has no tag`},
		{"the same image twice", "cert-manager-webhook:v1.18.4", "cert-manager-controller:v1.18.4", "routing.certManager.images[1]"},
		{"no version", "    version: v1.6.7\n", "", "routing.envoyGateway.version is empty"},
		{"a bad checksum", "9a250c698d78b92c670d9d2bd6bd54615f1dee41ddd520ece9704edf63088df8", "9a250c", `routing.envoyGateway.manifest.sha256 "9a250c"`},
	} {
		data := strings.Replace(resolved, c.old, c.new, 1)
		if data == resolved {
			t.Fatalf("%s: the case changed nothing", c.name)
		}
		if _, err := Parse([]byte(data), "bad.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// The routing images are the flow's only when every controller records its images; an image
// both controllers name is one image, and two repositories with the same last segment get
// distinct roles.
func TestRoutingImages(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got := set.RoutingImages(); got != nil {
		t.Errorf("unresolved routing pins give images %v", got)
	}
	img := func(ref string) Image {
		i, err := ParseImage(ref)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	d := "@sha256:" + strings.Repeat("cd", 32)
	set.Routing.CertManager.Images = []Image{img("quay.io/jetstack/cert-manager-controller:v1.18.4" + d), img("docker.io/envoyproxy/gateway:v1.6.7" + d)}
	set.Routing.EnvoyGateway.Images = []Image{img("docker.io/envoyproxy/gateway:v1.6.7" + d), img("ghcr.io/other/gateway:v1" + d)}
	var roles []string
	for _, p := range set.RoutingImages() {
		if !p.Routing || p.Gateway != nil || p.Cluster {
			t.Errorf("%s: use %+v", p.Role, p.ImageUse)
		}
		roles = append(roles, p.Key+" "+p.Role+" "+p.Title)
	}
	want := []string{"routing.certManager.images routing-cert-manager-controller cert-manager cert-manager-controller",
		"routing.certManager.images routing-gateway cert-manager gateway",
		"routing.envoyGateway.images routing-gateway-2 Envoy Gateway gateway"}
	if !slices.Equal(roles, want) {
		t.Errorf("routing images %q, want %q", roles, want)
	}
}

// --pin-file naming a missing file or a file that is no pin set: both are bad settings that name
// the setting and say what to do; no path is the pins built into occ.
func TestFromSettingRefusesAsABadSetting(t *testing.T) {
	const setting = "--pin-file (OCC_DEVELOPMENT_PIN_FILE)"
	if set, err := FromSetting("", setting); err != nil || set.Source != EmbeddedSource {
		t.Fatalf("no pin file: %v, %v; want the embedded set", set, err)
	}
	dir := t.TempDir()
	broken := filepath.Join(dir, "pins.yaml")
	if err := os.WriteFile(broken, []byte("schemaVersion: 99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{filepath.Join(dir, "absent.yaml"): "does not exist: name a pin file", broken: "is not a valid pin file"} {
		_, err := FromSetting(path, setting)
		var oe *option.Error
		if !errors.As(err, &oe) || oe.Option != setting || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an option error saying %q", path, err, want)
		}
	}
}
