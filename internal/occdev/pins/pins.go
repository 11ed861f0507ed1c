// Package pins holds the pinned artifacts `occ dev up` installs: the OpenShell source archive
// (for its Helm charts), the OpenShell images, the k3s node image, k3d's tools image, the Agent
// Sandbox manifest and the images the OCE control plane is built on or runs with, each with the
// checksum or digest it is verified against.
//
// Pins are data, not code: the default set lives in pins.yaml, embedded into the binary, and a
// file of the same shape can replace it (the caller maps OCC_DEVELOPMENT_PIN_FILE or a flag to
// Load). Every set is decoded strictly and validated before anything uses it.
package pins

import (
	_ "embed"
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strings"

	goyaml "go.yaml.in/yaml/v3"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/strictyaml"
)

// SchemaVersion is the pin file format this occ understands.
const SchemaVersion = 1

//go:embed pins.yaml
var embedded []byte

// EmbeddedSource names the built-in pin set in errors and summaries.
const EmbeddedSource = "embedded pins.yaml"

// Set is a complete, validated set of pins.
type Set struct {
	SchemaVersion int          `json:"schemaVersion"`
	OpenShell     OpenShell    `json:"openshell"`
	K3s           K3s          `json:"k3s"`
	K3d           K3d          `json:"k3d"`
	AgentSandbox  AgentSandbox `json:"agentSandbox"`
	// Routing pins the routing controllers `up` installs beside Agent Sandbox; nil when the
	// file has no routing section (up then installs none, and says so).
	Routing *Routing `json:"routing,omitempty"`
	OCE     OCE      `json:"oce"`
	// Notes are facts about individual pins that a reader of the set must know (a known defect
	// of the pinned release, a digest not yet confirmed); `occ dev pins show` prints each beside
	// its pin.
	Notes []Note `json:"notes,omitempty"`

	// Source says where the set came from (a file path or EmbeddedSource), for messages.
	Source string `json:"-"`
}

// OpenShell pins one OpenShell release.
type OpenShell struct {
	// Version is the release version without a leading "v"; it becomes the packaged charts'
	// version and appVersion.
	Version string `json:"version"`
	// Commit is the 40-hex upstream commit the images were built from.
	Commit        string        `json:"commit"`
	SourceArchive SourceArchive `json:"sourceArchive"`
	Charts        Charts        `json:"charts"`
	Images        Images        `json:"images"`
}

// Artifact is a downloadable file and the SHA-256 it must have.
type Artifact struct {
	URL string `json:"url"`
	// SHA256 is 64 lower-case hex digits.
	SHA256 string `json:"sha256"`
}

// SourceArchive is the OpenShell source tarball; only its Helm subtree is ever extracted.
type SourceArchive struct {
	Artifact
	// TopDirectory is the single directory every entry of the tarball lives under
	// (GitHub tag tarballs use "<Repo>-<version>").
	TopDirectory string `json:"topDirectory"`
	// HelmDirectory is the subtree below TopDirectory that holds the charts ("deploy/helm").
	HelmDirectory string `json:"helmDirectory"`
}

// Charts are chart directories relative to the archive's top directory, inside HelmDirectory.
type Charts struct {
	Gateway   string `json:"gateway"`
	Workspace string `json:"workspace"`
}

// Images are the OpenShell images, each pinned by digest.
type Images struct {
	Gateway    Image `json:"gateway"`
	Sandbox    Image `json:"sandbox"`
	Supervisor Image `json:"supervisor"`
}

// K3s pins the k3s node image used by occ-created clusters.
type K3s struct {
	Image Image `json:"image"`
}

// K3d pins the helper images of the linked k3d library.
type K3d struct {
	// ToolsImage is the k3d-tools image k3d starts next to every cluster (it always does, and
	// would otherwise pull the unpinned "latest" tag).
	ToolsImage Image `json:"toolsImage"`
}

// AgentSandbox pins the Agent Sandbox controller manifest.
type AgentSandbox struct {
	Version  string   `json:"version"`
	Manifest Artifact `json:"manifest"`
}

// Routing pins the two controllers that route to dedicated Agent Gateways: cert-manager (the
// route's certificates) and Envoy Gateway (the route itself).
type Routing struct {
	CertManager  RoutingController `json:"certManager"`
	EnvoyGateway RoutingController `json:"envoyGateway"`
}

// RoutingController pins one routing controller's release manifest and the images it starts.
type RoutingController struct {
	Version  string   `json:"version"`
	Manifest Artifact `json:"manifest"`
	// Images are the images the manifest starts, each as the manifest names it (repository and
	// tag) with the digest the tag served when the pin was made. The release manifests name
	// their images by tag only; up runs each by this digest instead, and refuses a manifest
	// image that has none here. Empty when the digests were never resolved: up then installs no
	// routing controllers and says why.
	Images []Image `json:"images,omitempty"`
}

// Controllers are the routing controllers in the order up installs them, with their pin keys.
func (r *Routing) Controllers() []NamedController {
	return []NamedController{
		{Name: "cert-manager", Key: KeyRoutingCertManager, RoutingController: &r.CertManager},
		{Name: "Envoy Gateway", Key: KeyRoutingEnvoyGateway, RoutingController: &r.EnvoyGateway},
	}
}

// NamedController is a routing controller with its name and its pins' key (<key>.manifest,
// <key>.images).
type NamedController struct {
	Name string
	Key  string
	*RoutingController
}

// Resolved reports whether every controller records the digests of its images.
func (r *Routing) Resolved() bool {
	return r != nil && len(r.CertManager.Images) > 0 && len(r.EnvoyGateway.Images) > 0
}

// OCE pins the images of the OCE control plane that occ does not build from the checkout.
type OCE struct {
	// NodeBaseImage is the NODE_BASE_IMAGE build argument of the controller build (the root
	// Dockerfile's dependencies stage has no default and asks for an approved immutable Node 24).
	NodeBaseImage Image `json:"nodeBaseImage"`
	// PostgresImage is the PostgreSQL of the Kubernetes-only profile.
	PostgresImage Image `json:"postgresImage"`
}

// Default returns the embedded pin set. It is validated like any other file, so a broken
// embedded file surfaces as an error instead of a bad install.
func Default() (*Set, error) {
	return Parse(embedded, EmbeddedSource)
}

// Load reads and validates the pin file at path.
func Load(path string) (*Set, error) {
	data, err := fsutil.ReadRegular(path)
	if err != nil {
		return nil, fmt.Errorf("read pin file %s: %w; check OCC_DEVELOPMENT_PIN_FILE or the pin-file flag", path, err)
	}
	return Parse(data, path)
}

// Resolve returns the set from path, or the embedded set when path is empty.
func Resolve(path string) (*Set, error) {
	if path == "" {
		return Default()
	}
	return Load(path)
}

// FromSetting is Resolve for `occ dev up`, whose setting (a flag and its variable) named path: a
// pin file that is missing or invalid is a bad setting (*option.Error), which the dry run reports
// and `up` refuses before doing anything.
func FromSetting(path, setting string) (*Set, error) {
	if path == "" {
		return Default()
	}
	if err := option.RegularFile(path); err != nil {
		return nil, &option.Error{Option: setting, Value: path, Rule: err.Error(), Fix: "name a pin file, or leave it unset to use the pins built into occ"}
	}
	set, err := Load(path)
	if err != nil {
		return nil, &option.Error{Option: setting, Value: path, Rule: "is not a valid pin file", Fix: err.Error()}
	}
	return set, nil
}

// Parse decodes data strictly (unknown or duplicate keys are errors, because a misspelt key
// would silently fall back to nothing; a value of the wrong YAML type too), naming every problem
// with its YAML path and line, and validates it. source names data in errors.
func Parse(data []byte, source string) (*Set, error) {
	d := strictyaml.NewDecoder(&strictyaml.Options{
		Document:  "the pin file",
		EmptyRule: "write the pins (occ dev pins resolve writes a complete file), or use the built-in pins",
		ShowValue: contract.RedactURL,
	})
	var f fileSet
	root := d.Document(data)
	if root != nil {
		if root.Kind != goyaml.MappingNode {
			d.Fail(strictyaml.DocumentPath, root, "a pin file is a YAML mapping with the keys "+strings.Join(strictyaml.KeysOf(reflect.TypeOf(fileSet{})), ", "))
		} else {
			dropNulls(root)
			d.Value("", root, reflect.ValueOf(&f).Elem())
		}
	}
	if len(d.Problems) > 0 {
		desc := d.Problems.InDocumentOrder().Describe("the pin file")
		if !strings.HasSuffix(desc, ".") {
			desc += "."
		}
		return nil, fmt.Errorf("pin file %s: %s Fix the file, or leave the pin file unset to use the built-in pins", source, desc)
	}
	set, err := f.build()
	if err != nil {
		return nil, fmt.Errorf("pin file %s: %w", source, err)
	}
	set.Source = source
	return set, nil
}

// fileSet mirrors Set with images as plain strings, so a bad reference is reported under its key
// rather than as an anonymous JSON decoding error.
type fileSet struct {
	SchemaVersion int `json:"schemaVersion"`
	OpenShell     struct {
		Version       string      `json:"version"`
		Commit        string      `json:"commit"`
		SourceArchive fileArchive `json:"sourceArchive"`
		Charts        Charts      `json:"charts"`
		Images        struct {
			Gateway    string `json:"gateway"`
			Sandbox    string `json:"sandbox"`
			Supervisor string `json:"supervisor"`
		} `json:"images"`
	} `json:"openshell"`
	K3s struct {
		Image string `json:"image"`
	} `json:"k3s"`
	K3d struct {
		ToolsImage string `json:"toolsImage"`
	} `json:"k3d"`
	AgentSandbox AgentSandbox `json:"agentSandbox"`
	Routing      *struct {
		CertManager  fileController `json:"certManager"`
		EnvoyGateway fileController `json:"envoyGateway"`
	} `json:"routing"`
	OCE struct {
		NodeBaseImage string `json:"nodeBaseImage"`
		PostgresImage string `json:"postgresImage"`
	} `json:"oce"`
	Notes []Note `json:"notes"`
}

// fileController is RoutingController as the file writes it, its images as plain strings.
type fileController struct {
	Version  string   `json:"version"`
	Manifest Artifact `json:"manifest"`
	Images   []string `json:"images"`
}

// build validates c under key and returns it.
func (c fileController) build(key string, add func(error)) RoutingController {
	if strings.TrimSpace(c.Version) == "" {
		add(fmt.Errorf("%s.version is empty; set the release the manifest belongs to (for example v1.18.4)", key))
	}
	add(checkArtifact(key+".manifest", c.Manifest))
	out := RoutingController{Version: c.Version, Manifest: c.Manifest}
	seen := map[string]int{}
	for i, ref := range c.Images {
		k := fmt.Sprintf("%s.images[%d]", key, i)
		img := pinnedImage(k, ref, add)
		if img.Repository == "" {
			continue
		}
		if img.Tag == "" {
			add(fmt.Errorf("%s %q has no tag; pin it as the manifest names it, <repository>:<tag>@sha256:<digest>, so up can tell which manifest image it pins", k, ref))
		}
		if j, dup := seen[img.Name()+":"+img.Tag]; dup {
			add(fmt.Errorf("%s %q pins the same repository and tag as %s.images[%d]; keep one", k, ref, key, j))
		}
		seen[img.Name()+":"+img.Tag] = i
		out.Images = append(out.Images, img)
	}
	return out
}

// dropNulls removes the keys of n's mappings, at every level, whose value is empty (null): such a
// key is as good as absent, and the pin's own rule then names what is missing by its full key
// (k3d.toolsImage), where the decoder could only say that k3d is not a mapping.
func dropNulls(n *goyaml.Node) {
	if n.Kind == goyaml.MappingNode {
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			if strictyaml.IsNull(n.Content[i+1]) {
				continue
			}
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
		n.Content = kept
	}
	for _, c := range n.Content {
		dropNulls(c)
	}
}

// K3sRelease is the Kubernetes version a k3s image's tag names ("v1.36.4" of "v1.36.4-k3s1"),
// and whether it names one: k3s reports its version as "v1.36.4+k3s1", and image tags cannot
// hold "+".
func K3sRelease(img Image) (string, bool) {
	m := k3sTag.FindStringSubmatch(img.Tag)
	if m == nil {
		return "", false
	}
	return m[1], true
}

var k3sTag = regexp.MustCompile(`^(v[0-9]+\.[0-9]+\.[0-9]+)[-+]k3s[0-9]+$`)

// fileArchive is SourceArchive as the file writes it, its artifact's keys beside its own.
type fileArchive struct {
	URL           string `json:"url"`
	SHA256        string `json:"sha256"`
	TopDirectory  string `json:"topDirectory"`
	HelmDirectory string `json:"helmDirectory"`
}

func (a fileArchive) archive() SourceArchive {
	return SourceArchive{Artifact: Artifact{URL: a.URL, SHA256: a.SHA256}, TopDirectory: a.TopDirectory, HelmDirectory: a.HelmDirectory}
}

var (
	sha256Pattern  = regexp.MustCompile(`^[a-f0-9]{64}$`)
	commitPattern  = regexp.MustCompile(`^[a-f0-9]{40}$`)
	versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$`)
	dirNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// ValidVersion reports whether v is an OpenShell version as pins write it: a semantic version
// without a leading "v".
func ValidVersion(v string) bool { return versionPattern.MatchString(v) }

// ValidCommit reports whether c is a full commit id: 40 lower-case hex digits.
func ValidCommit(c string) bool { return commitPattern.MatchString(c) }

func (f *fileSet) build() (*Set, error) {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if f.SchemaVersion != SchemaVersion {
		add(fmt.Errorf("schemaVersion is %d; this occ reads schemaVersion %d", f.SchemaVersion, SchemaVersion))
	}
	o := f.OpenShell
	archive := o.SourceArchive.archive()
	if !versionPattern.MatchString(o.Version) {
		add(fmt.Errorf("openshell.version %q must be a semantic version without a leading v (for example 0.1.3-pre.2)", o.Version))
	}
	if !commitPattern.MatchString(o.Commit) {
		add(fmt.Errorf("openshell.commit %q must be 40 lower-case hex digits", o.Commit))
	}
	add(checkArtifact("openshell.sourceArchive", archive.Artifact))
	if !dirNamePattern.MatchString(archive.TopDirectory) {
		add(fmt.Errorf("openshell.sourceArchive.topDirectory %q must be one directory name (for example OpenShell-0.1.3-pre.2)", archive.TopDirectory))
	}
	helmDir := archive.HelmDirectory
	add(checkRelativePath("openshell.sourceArchive.helmDirectory", helmDir))
	if o.Charts.Gateway != "" && o.Charts.Gateway == o.Charts.Workspace {
		add(fmt.Errorf("openshell.charts.workspace %q is openshell.charts.gateway too; the Workspace chart is another chart of the archive (for example %s/openshell-workspace)", o.Charts.Workspace, helmDirOr(helmDir)))
	}
	for _, c := range []struct{ key, value string }{
		{"openshell.charts.gateway", o.Charts.Gateway},
		{"openshell.charts.workspace", o.Charts.Workspace},
	} {
		if err := checkRelativePath(c.key, c.value); err != nil {
			add(err)
			continue
		}
		if helmDir != "" && !strings.HasPrefix(c.value, helmDir+"/") {
			add(fmt.Errorf("%s %q must lie inside openshell.sourceArchive.helmDirectory %q, the only subtree occ extracts", c.key, c.value, helmDir))
		}
	}
	set := &Set{
		SchemaVersion: f.SchemaVersion,
		OpenShell: OpenShell{
			Version:       o.Version,
			Commit:        o.Commit,
			SourceArchive: archive,
			Charts:        o.Charts,
		},
		AgentSandbox: f.AgentSandbox,
	}
	for _, p := range pinTable {
		if p.image != nil {
			*p.image(set) = pinnedImage(p.key, p.file(f), add)
		}
	}
	if k3s := set.K3s.Image; k3s.Digest != "" {
		if _, ok := K3sRelease(k3s); !ok {
			add(fmt.Errorf("%s %q does not carry a k3s release tag (vMAJOR.MINOR.PATCH-k3sN): up reads the cluster's Kubernetes version from it to render the Gateway chart; pin it as <repository>:<release tag>@sha256:<digest> (for example docker.io/rancher/k3s:v1.36.4-k3s1@sha256:…)", KeyK3sImage, k3s.String()))
		}
	}
	if strings.TrimSpace(f.AgentSandbox.Version) == "" {
		add(errors.New("agentSandbox.version is empty; set the Agent Sandbox release (for example v0.5.2)"))
	}
	add(checkArtifact("agentSandbox.manifest", f.AgentSandbox.Manifest))
	if r := f.Routing; r != nil {
		set.Routing = &Routing{
			CertManager:  r.CertManager.build(KeyRoutingCertManager, add),
			EnvoyGateway: r.EnvoyGateway.build(KeyRoutingEnvoyGateway, add),
		}
	}
	set.Notes = f.Notes
	add(checkNotes(f.Notes))
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return set, nil
}

// pinnedImage parses ref and requires a digest: a tag alone can be moved, a digest cannot.
func pinnedImage(key, ref string, add func(error)) Image {
	img, err := ParseImage(ref)
	if err != nil {
		add(fmt.Errorf("%s: %w", key, err))
		return Image{}
	}
	if img.Digest == "" {
		add(fmt.Errorf("%s %q has no digest; pin it as <reference>@sha256:<64 hex>", key, ref))
	}
	return img
}

// helmDirOr is the Helm directory for a message, or its usual value when none is set.
func helmDirOr(dir string) string {
	if dir == "" {
		return "deploy/helm"
	}
	return dir
}

func checkArtifact(key string, a Artifact) error {
	var errs []error
	if !strings.HasPrefix(a.URL, "https://") && !strings.HasPrefix(a.URL, "http://") {
		errs = append(errs, fmt.Errorf("%s.url %q must be an http(s) URL", key, contract.RedactURL(a.URL)))
	}
	if !sha256Pattern.MatchString(a.SHA256) {
		errs = append(errs, fmt.Errorf("%s.sha256 %q must be 64 lower-case hex digits (the output of sha256sum)", key, a.SHA256))
	}
	return errors.Join(errs...)
}

// checkRelativePath refuses absolute, unclean and escaping paths: chart paths are joined onto an
// extraction directory and must stay inside it.
func checkRelativePath(key, p string) error {
	if p == "" {
		return fmt.Errorf("%s is empty; set a path relative to the archive's top directory", key)
	}
	if path.IsAbs(p) || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || p == ".." {
		return fmt.Errorf("%s %q must be a clean relative path inside the archive (no leading /, no .., no trailing /)", key, p)
	}
	return nil
}
