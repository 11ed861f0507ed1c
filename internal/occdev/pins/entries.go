package pins

import (
	"errors"
	"fmt"
	"strings"
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
	KeyOCEPostgresImage = "oce.postgresImage"
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
	// Value is the pinned value as the pin file writes it: an image reference, a URL, a path, or
	// for the release as a whole its version.
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

// Entries lists every pin of the set with its notes.
func (s *Set) Entries() []Entry {
	o := &s.OpenShell
	entries := []Entry{
		{Key: KeyOpenShell, Value: o.Version + " (commit " + o.Commit + ")"},
		{Key: KeySourceArchive, Value: o.SourceArchive.URL, SHA256: o.SourceArchive.SHA256, Artifact: &o.SourceArchive.Artifact,
			Detail: "top directory " + o.SourceArchive.TopDirectory + ", charts under " + o.SourceArchive.HelmDirectory},
		{Key: KeyGatewayChart, Value: o.Charts.Gateway},
		{Key: KeyWorkspaceChart, Value: o.Charts.Workspace},
		{Key: KeyGatewayImage, Image: &o.Images.Gateway},
		{Key: KeySandboxImage, Image: &o.Images.Sandbox},
		{Key: KeySupervisorImage, Image: &o.Images.Supervisor},
		{Key: KeyK3sImage, Image: &s.K3s.Image},
		{Key: KeyK3dToolsImage, Image: &s.K3d.ToolsImage},
		{Key: KeyAgentSandbox, Value: s.AgentSandbox.Manifest.URL, SHA256: s.AgentSandbox.Manifest.SHA256, Artifact: &s.AgentSandbox.Manifest,
			Detail: "Agent Sandbox " + s.AgentSandbox.Version},
		{Key: KeyOCENodeBaseImage, Image: &s.OCE.NodeBaseImage},
		{Key: KeyOCEPostgresImage, Image: &s.OCE.PostgresImage},
	}
	for i := range entries {
		e := &entries[i]
		if e.Image != nil {
			e.Value = e.Image.String()
		}
		for _, n := range s.Notes {
			if n.Pin == e.Key {
				e.Notes = append(e.Notes, n.Text)
			}
		}
	}
	return entries
}

// pinKeys are the keys a note may name, in pin file order.
var pinKeys = []string{
	KeyOpenShell, KeySourceArchive, KeyGatewayChart, KeyWorkspaceChart,
	KeyGatewayImage, KeySandboxImage, KeySupervisorImage,
	KeyK3sImage, KeyK3dToolsImage, KeyAgentSandbox, KeyOCENodeBaseImage, KeyOCEPostgresImage,
}

// checkNotes requires every note to name a pin of the set and to say something: a note about a
// misspelt key would never be shown beside any pin.
func checkNotes(notes []Note) error {
	var errs []error
	for i, n := range notes {
		known := false
		for _, k := range pinKeys {
			known = known || n.Pin == k
		}
		if !known {
			errs = append(errs, fmt.Errorf("notes[%d].pin %q is not a pin of the set; use one of %s", i, n.Pin, strings.Join(pinKeys, ", ")))
		}
		if strings.TrimSpace(n.Text) == "" {
			errs = append(errs, fmt.Errorf("notes[%d].text is empty; write the note or remove the entry", i))
		}
	}
	return errors.Join(errs...)
}
