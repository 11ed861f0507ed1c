package state

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
)

// ControlPlane is the OCE control plane `up` started: where its source came from, which images
// it runs, where its API answers, the Compose project it runs as (the Compose profile), and
// where the verified bootstrap key was written. It holds paths, names and digests, never a key.
type ControlPlane struct {
	// Checkout is the absolute path of the OCE checkout; Commit its HEAD when `up` ran.
	Checkout string `json:"checkout"`
	Commit   string `json:"commit,omitempty"`
	// Compose is the recorded Compose project (Compose profile only): the snapshot every later
	// Compose call uses, and the names it pairs with it.
	Compose *ComposeProject `json:"compose,omitempty"`
	// Images are the control plane's images: built from the checkout, or selected by digest.
	Images []ControlPlaneImage `json:"images,omitempty"`
	// BaseImages are the images the builds of Images fetched, each made present by digest
	// before any build (an image `up` pulled is also an object of the state, which `down`
	// removes).
	BaseImages []BaseImage `json:"baseImages,omitempty"`
	// APIURL is the OCE API's origin.
	APIURL string `json:"apiURL,omitempty"`
	// HostPorts are the loopback ports occ decided for the control plane, by the variable that
	// sets each (OPENCLAW_DEV_PORT, OCC_POSTGRES_PORT): given, or chosen free for an environment
	// beside others.
	HostPorts map[string]int `json:"hostPorts,omitempty"`
	// Subnet is the engine network's subnet occ chose for an environment beside others, by the
	// variable that sets it (OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR); empty when it was given or is
	// the default environment's.
	Subnet string `json:"subnet,omitempty"`
	// KeyPath is the verified bootstrap service key file, once written; KeyOwned says it is the
	// state directory's own (removed with it) rather than the user's --key-output.
	KeyPath  string `json:"keyPath,omitempty"`
	KeyOwned bool   `json:"keyOwned,omitempty"`
	// InstallationID is the Installation the key was verified against.
	InstallationID string `json:"installationID,omitempty"`
}

// ComposeProject is a Compose project's snapshot and the names every Compose call pairs with it.
type ComposeProject struct {
	// Project is the Compose project name.
	Project string `json:"project"`
	// Snapshot is the rendered model in the state directory.
	Snapshot string `json:"snapshot"`
	// Checkout is the project directory.
	Checkout string `json:"checkout"`
	// Started are the services `up` starts, in start order; `status` reports them.
	Started []string `json:"started,omitempty"`
}

// ControlPlaneImage is one control-plane image.
type ControlPlaneImage struct {
	// Role says what runs it ("development", "runtime", "controller").
	Role string `json:"role"`
	// Reference names it in the engine: the built tag or the selected digest reference.
	Reference string `json:"reference"`
	// ID is the engine's image ID (the config digest on the classic image store, the manifest
	// digest on the containerd store).
	ID string `json:"id,omitempty"`
	// Selected is true for an image the developer selected by digest (not built by occ).
	Selected bool `json:"selected,omitempty"`
	// InCluster is the digest reference the cluster runs it by, once imported.
	InCluster string `json:"inCluster,omitempty"`
}

// BaseImage is one base image of the control plane's builds.
type BaseImage struct {
	// Given is the reference as the Dockerfile, a build argument or a setting gave it.
	Given string `json:"given"`
	// Reference is the digest reference pulled and built from.
	Reference string `json:"reference"`
	// ID is the engine's image ID of it.
	ID string `json:"id,omitempty"`
	// Resolved is true when Given was a tag, resolved to Reference's digest at its registry.
	Resolved bool `json:"resolved,omitempty"`
	// Source says where Given came from; Uses are the Dockerfile lines that fetch it.
	Source string   `json:"source"`
	Uses   []string `json:"uses"`
}

var (
	commitPattern    = regexp.MustCompile(`^[0-9a-f]{40}$`)
	rolePattern      = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)
	hostPortVariable = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	imageIDPattern   = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// referencePattern is a loose image reference: no spaces or control characters.
	referencePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,511}$`)
)

func (c *ControlPlane) clone() *ControlPlane {
	if c == nil {
		return nil
	}
	out := *c
	if c.Compose != nil {
		p := *c.Compose
		p.Started = append([]string(nil), c.Compose.Started...)
		out.Compose = &p
	}
	out.Images = append([]ControlPlaneImage(nil), c.Images...)
	if c.HostPorts != nil {
		out.HostPorts = maps.Clone(c.HostPorts)
	}
	out.BaseImages = make([]BaseImage, len(c.BaseImages))
	for i, b := range c.BaseImages {
		b.Uses = append([]string(nil), b.Uses...)
		out.BaseImages[i] = b
	}
	if c.BaseImages == nil {
		out.BaseImages = nil
	}
	return &out
}

// validate checks the record's fields: absolute paths, a 40-hex commit, a Compose snapshot
// inside the checkout's state (an absolute path named by the record, never derived from the
// environment), well-formed image references and an API origin.
func (c *ControlPlane) validate() error {
	if c == nil {
		return nil
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("controlPlane."+format, a...)) }
	if !filepath.IsAbs(c.Checkout) {
		bad("checkout %q must be an absolute path", c.Checkout)
	}
	if c.Commit != "" && !commitPattern.MatchString(c.Commit) {
		bad("commit %q must be 40 lower-case hex digits", c.Commit)
	}
	if p := c.Compose; p != nil {
		if !IsComposeProjectName(p.Project) {
			bad("compose.project %q must be lower-case letters, digits, '_' and '-', starting with a letter or digit", p.Project)
		}
		if !filepath.IsAbs(p.Snapshot) {
			bad("compose.snapshot %q must be an absolute path", p.Snapshot)
		}
		if !filepath.IsAbs(p.Checkout) {
			bad("compose.checkout %q must be an absolute path", p.Checkout)
		}
	}
	for i, img := range c.Images {
		if !rolePattern.MatchString(img.Role) {
			bad("images[%d].role %q must be a lower-case name", i, img.Role)
		}
		if !referencePattern.MatchString(img.Reference) {
			bad("images[%d].reference %q is not an image reference", i, img.Reference)
		}
		if img.ID != "" && !imageIDPattern.MatchString(img.ID) {
			bad("images[%d].id %q must be sha256: and 64 lower-case hex digits", i, img.ID)
		}
		if img.InCluster != "" && !referencePattern.MatchString(img.InCluster) {
			bad("images[%d].inCluster %q is not an image reference", i, img.InCluster)
		}
	}
	for i, b := range c.BaseImages {
		if !referencePattern.MatchString(b.Given) {
			bad("baseImages[%d].given %q is not an image reference", i, b.Given)
		}
		if !referencePattern.MatchString(b.Reference) || !strings.Contains(b.Reference, "@sha256:") {
			bad("baseImages[%d].reference %q is not a digest reference", i, b.Reference)
		}
		if b.ID != "" && !imageIDPattern.MatchString(b.ID) {
			bad("baseImages[%d].id %q must be sha256: and 64 lower-case hex digits", i, b.ID)
		}
	}
	if c.APIURL != "" {
		if err := checkURL(c.APIURL); err != nil {
			bad("apiURL: %v", err)
		}
	}
	for name, port := range c.HostPorts {
		if !hostPortVariable.MatchString(name) || port < 1 || port > 65535 {
			bad("hostPorts[%q] %d must be a variable name and a port between 1 and 65535", name, port)
		}
	}
	if p, err := netip.ParsePrefix(c.Subnet); c.Subnet != "" && (err != nil || p != p.Masked()) {
		bad("subnet %q must be a network in CIDR form", c.Subnet)
	}
	if c.KeyPath != "" && !filepath.IsAbs(c.KeyPath) {
		bad("keyPath %q must be an absolute path", c.KeyPath)
	}
	if c.KeyOwned && c.KeyPath == "" {
		bad("keyOwned is set without a keyPath")
	}
	if len(c.InstallationID) > 128 {
		bad("installationID is longer than 128 characters")
	}
	return errors.Join(errs...)
}
