package pins

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/contract"
)

// The keys of a set's pins, as they are spelt in a pin file. Notes name their pin by these keys.
const (
	KeyOpenShell        = "openshell"
	KeySourceArchive    = "openshell.sourceArchive"
	KeyGatewayChart     = "openshell.charts.gateway"
	KeyWorkspaceChart   = "openshell.charts.workspace"
	KeyGatewayImage     = "openshell.images.gateway"
	KeySandboxImage     = "openshell.images.sandbox"
	KeySupervisorImage  = "openshell.images.supervisor"
	KeyK3sImage         = "k3s.image"
	KeyK3dToolsImage    = "k3d.toolsImage"
	KeyAgentSandbox     = "agentSandbox.manifest"
	KeyOCENodeBaseImage = "oce.nodeBaseImage"
	// KeyRouting names the routing section in notes; a controller's pins are <key>.manifest and
	// <key>.images.
	KeyRouting             = "routing"
	KeyRoutingCertManager  = "routing.certManager"
	KeyRoutingEnvoyGateway = "routing.envoyGateway"
	KeyOCEPostgresImage    = "oce.postgresImage"
)

// Note is a fact about one pin of the set, written in the pin file's notes list.
type Note struct {
	// Pin is the key of the pin the note is about (for example k3d.toolsImage), or "openshell"
	// for the OpenShell release as a whole.
	Pin string `json:"pin"`
	// Text is the note itself, in full sentences.
	Text string `json:"text"`
}

// Entry is one pin of a set, in the order a pin file lists them.
type Entry struct {
	// Key is the pin's key in the pin file.
	Key string `json:"pin"`
	// Value is the pinned value as the pin file writes it, for display: an image reference, a URL
	// (shown by occ's one rule, contract.RedactURL: a credential in its userinfo, query or
	// fragment is never printed; Artifact keeps the URL itself), a path, or for the release as a
	// whole its version.
	Value string `json:"value"`
	// SHA256 is the checksum of a downloaded artifact; empty for other pins.
	SHA256 string `json:"sha256,omitempty"`
	// Detail holds the rest of a pin that has more than one value (the archive's directories,
	// the Agent Sandbox release).
	Detail string `json:"detail,omitempty"`
	// Image is set for image pins.
	Image *Image `json:"-"`
	// Artifact is set for downloaded artifacts.
	Artifact *Artifact `json:"-"`
	// Notes are the texts of the set's notes about this pin.
	Notes []string `json:"notes,omitempty"`
}

// ImageUse is what `occ dev up` itself does with a pinned image. An image pin without one is
// used by a control-plane profile through its field of the set.
type ImageUse struct {
	// Role names the image in the plan's list of images and its lane; Title in its steps' names.
	Role  string
	Title string
	// Cluster says k3d creates the cluster with the image (the k3s node and the k3d tools): it
	// is pulled into the engine for a cluster occ creates, and never imported into the node.
	Cluster bool
	// PullFirst puts the image's download before those of the other images imported into the
	// node. It is set for the largest of them, the Sandbox image (a base image of language
	// runtimes and agent tools, hundreds of MB, where the others are a binary or two of tens):
	// its import into the node takes longest, and downloaded first it overlaps the others'
	// downloads instead of following the last byte.
	PullFirst bool
	// Routing is set for an image a routing controller runs or names: pulled into the engine,
	// imported into the node and verified there, like the Gateway's (an existing cluster pulls it
	// itself).
	Routing bool
	// Gateway is set for an image the Gateway runs: it is pulled into the engine, imported into
	// the node and verified there (an existing cluster pulls it itself), and the render check
	// requires the Gateway chart to run it by the values GatewayValues sets.
	Gateway *GatewayImage
}

// GatewayImage is how the Gateway chart's values name one of its images.
type GatewayImage struct {
	// Component is the values key the image's registry, repository and digest are set under
	// (<component>.image.registry and so on).
	Component string
	// Role names the image in the render check's messages.
	Role string
}

// PinnedImage is an image pin of a set with what `occ dev up` does with it.
type PinnedImage struct {
	Key   string
	Image Image
	ImageUse
}

// pin is one row of pinTable: a pin's key and how to read it from a set. An image pin says
// where the set and the pin file's shape hold it, and what `occ dev up` does with it; every
// other pin builds its own entry.
type pin struct {
	key string
	// entry is the entry of a pin that is not an image, without its key and notes.
	entry func(s *Set) Entry
	image func(s *Set) *Image
	file  func(f *fileSet) string
	use   *ImageUse
}

// pinTable lists every pin of a set in pin file order. It is the one place a pin is described:
// the entries, the keys a note may name, the parsing of each image reference and what `up`
// does with each image all come from it. A pinned image is a row here, its key above and its
// field in the set and the pin file's shape (pins.go).
var pinTable = []pin{
	{key: KeyOpenShell, entry: func(s *Set) Entry {
		return Entry{Value: s.OpenShell.Version + " (commit " + s.OpenShell.Commit + ")"}
	}},
	{key: KeySourceArchive, entry: func(s *Set) Entry {
		a := &s.OpenShell.SourceArchive
		return Entry{Value: contract.RedactURL(a.URL), SHA256: a.SHA256, Artifact: &a.Artifact,
			Detail: "top directory " + a.TopDirectory + ", charts under " + a.HelmDirectory}
	}},
	{key: KeyGatewayChart, entry: func(s *Set) Entry { return Entry{Value: s.OpenShell.Charts.Gateway} }},
	{key: KeyWorkspaceChart, entry: func(s *Set) Entry { return Entry{Value: s.OpenShell.Charts.Workspace} }},
	{key: KeyGatewayImage,
		image: func(s *Set) *Image { return &s.OpenShell.Images.Gateway },
		file:  func(f *fileSet) string { return f.OpenShell.Images.Gateway },
		use:   &ImageUse{Role: "gateway", Title: "OpenShell Gateway", Gateway: &GatewayImage{Component: "gateway", Role: "Gateway"}}},
	{key: KeySandboxImage,
		image: func(s *Set) *Image { return &s.OpenShell.Images.Sandbox },
		file:  func(f *fileSet) string { return f.OpenShell.Images.Sandbox },
		use:   &ImageUse{Role: "sandbox", Title: "OpenShell Sandbox", PullFirst: true, Gateway: &GatewayImage{Component: "sandboxRuntime", Role: "sandbox runtime"}}},
	{key: KeySupervisorImage,
		image: func(s *Set) *Image { return &s.OpenShell.Images.Supervisor },
		file:  func(f *fileSet) string { return f.OpenShell.Images.Supervisor },
		use:   &ImageUse{Role: "supervisor", Title: "OpenShell supervisor", Gateway: &GatewayImage{Component: "supervisor", Role: "supervisor"}}},
	{key: KeyK3sImage,
		image: func(s *Set) *Image { return &s.K3s.Image },
		file:  func(f *fileSet) string { return f.K3s.Image },
		use:   &ImageUse{Role: "k3sNode", Title: "k3s node", Cluster: true}},
	{key: KeyK3dToolsImage,
		image: func(s *Set) *Image { return &s.K3d.ToolsImage },
		file:  func(f *fileSet) string { return f.K3d.ToolsImage },
		use:   &ImageUse{Role: "k3dTools", Title: "k3d tools", Cluster: true}},
	{key: KeyAgentSandbox, entry: func(s *Set) Entry {
		m := &s.AgentSandbox.Manifest
		return Entry{Value: contract.RedactURL(m.URL), SHA256: m.SHA256, Artifact: m, Detail: "Agent Sandbox " + s.AgentSandbox.Version}
	}},
	{key: KeyOCENodeBaseImage,
		image: func(s *Set) *Image { return &s.OCE.NodeBaseImage },
		file:  func(f *fileSet) string { return f.OCE.NodeBaseImage }},
	{key: KeyOCEPostgresImage,
		image: func(s *Set) *Image { return &s.OCE.PostgresImage },
		file:  func(f *fileSet) string { return f.OCE.PostgresImage }},
}

// Entries lists every pin of the set with its notes.
func (s *Set) Entries() []Entry {
	entries := make([]Entry, 0, len(pinTable))
	for _, p := range pinTable {
		var e Entry
		if p.image != nil {
			img := p.image(s)
			e = Entry{Value: img.String(), Image: img}
		} else {
			e = p.entry(s)
		}
		e.Key = p.key
		entries = append(entries, s.noted(e))
		if p.key == KeyAgentSandbox && s.Routing != nil {
			entries = append(entries, s.routingEntries()...)
		}
	}
	return entries
}

// noted is e with the texts of the set's notes about its pin.
func (s *Set) noted(e Entry) Entry {
	for _, n := range s.Notes {
		if n.Pin == e.Key {
			e.Notes = append(e.Notes, n.Text)
		}
	}
	return e
}

// routingEntries are the routing section's pins: each controller's manifest, then its images
// (one entry each, under the controller's images key), or an entry saying none are recorded.
func (s *Set) routingEntries() []Entry {
	out := []Entry{s.noted(Entry{Key: KeyRouting, Value: "cert-manager " + s.Routing.CertManager.Version + ", Envoy Gateway " + s.Routing.EnvoyGateway.Version})}
	for _, c := range s.Routing.Controllers() {
		m := &c.Manifest
		out = append(out, s.noted(Entry{Key: c.Key + ".manifest", Value: contract.RedactURL(m.URL), SHA256: m.SHA256, Artifact: m, Detail: c.Name + " " + c.Version}))
		if len(c.Images) == 0 {
			out = append(out, s.noted(Entry{Key: c.Key + ".images", Value: "none recorded (up installs no routing controllers)"}))
		}
		for i := range c.Images {
			out = append(out, s.noted(Entry{Key: c.Key + ".images", Value: c.Images[i].String(), Image: &c.Images[i]}))
		}
	}
	return out
}

// ClusterImages are the images k3d creates a cluster with, in pin file order.
func (s *Set) ClusterImages() []PinnedImage {
	return s.pinnedImages(func(u *ImageUse) bool { return u.Cluster })
}

// GatewayImages are the images the Gateway runs, in pin file order.
func (s *Set) GatewayImages() []PinnedImage {
	return s.pinnedImages(func(u *ImageUse) bool { return u.Gateway != nil })
}

// SetImage replaces the image the pin key names; it reports false for a key that pins no image.
func (s *Set) SetImage(key string, img Image) bool {
	for _, p := range pinTable {
		if p.key == key && p.image != nil {
			*p.image(s) = img
			return true
		}
	}
	return false
}

// GatewayImagesOf are the images the Gateway runs as imgs pins them: every one is an OpenShell
// image (TestGatewayImagesAreOpenShellImages).
func GatewayImagesOf(imgs Images) []PinnedImage {
	s := &Set{OpenShell: OpenShell{Images: imgs}}
	return s.GatewayImages()
}

func (s *Set) pinnedImages(keep func(*ImageUse) bool) []PinnedImage {
	var out []PinnedImage
	for _, p := range pinTable {
		if p.use != nil && keep(p.use) {
			out = append(out, PinnedImage{Key: p.key, Image: *p.image(s), ImageUse: *p.use})
		}
	}
	return out
}

// RoutingImages are the images of the routing controllers, in pin file order, each once (an
// image both controllers name is one image); none unless every controller records its images.
// Each one's role is "routing-" and its repository's last segment (numbered when two share it).
func (s *Set) RoutingImages() []PinnedImage {
	if !s.Routing.Resolved() {
		return nil
	}
	var out []PinnedImage
	roles := map[string]int{}
	for _, c := range s.Routing.Controllers() {
		for _, img := range c.Images {
			if slices.ContainsFunc(out, func(p PinnedImage) bool { return p.Image.DigestReference() == img.DigestReference() }) {
				continue
			}
			base := img.Repository[strings.LastIndex(img.Repository, "/")+1:]
			role := "routing-" + base
			if roles[role]++; roles[role] > 1 {
				role = fmt.Sprintf("%s-%d", role, roles[role])
			}
			out = append(out, PinnedImage{Key: c.Key + ".images", Image: img,
				ImageUse: ImageUse{Role: role, Title: c.Name + " " + base, Routing: true}})
		}
	}
	return out
}

// pinKeys are the keys a note may name, in pin file order.
func pinKeys() []string {
	keys := make([]string, 0, len(pinTable)+5)
	for _, p := range pinTable {
		keys = append(keys, p.key)
	}
	keys = append(keys, KeyRouting)
	for _, c := range []string{KeyRoutingCertManager, KeyRoutingEnvoyGateway} {
		keys = append(keys, c+".manifest", c+".images")
	}
	return keys
}

// checkNotes requires every note to name a pin of the set and to say something: a note about a
// misspelt key would never be shown beside any pin.
func checkNotes(notes []Note) error {
	var errs []error
	keys := pinKeys()
	for i, n := range notes {
		if !slices.Contains(keys, n.Pin) {
			errs = append(errs, fmt.Errorf("notes[%d].pin %q is not a pin of the set; use one of %s", i, n.Pin, strings.Join(keys, ", ")))
		}
		if strings.TrimSpace(n.Text) == "" {
			errs = append(errs, fmt.Errorf("notes[%d].text is empty; write the note or remove the entry", i))
		}
	}
	return errors.Join(errs...)
}
