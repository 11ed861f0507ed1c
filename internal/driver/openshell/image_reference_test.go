package openshell

import (
	"strings"
	"testing"
)

// A library caller hands render Harness requirements whose image is not an image reference (an
// upper-case repository, a trailing space, a bare digest): render refuses it, naming the value,
// instead of sending a request the gateway's runtime can never pull.
func TestRenderRefusesInvalidImageReferences(t *testing.T) {
	d := newTestDriver(t, nil)
	for _, image := range []string{"Registry.example/Runtime:latest", "runtime:latest ", "runtime@sha256:1234"} {
		h := codexContext(testNamespace)
		h.Requirements.Image = image
		if _, err := d.RenderCreateSandbox(h); err == nil || !strings.Contains(err.Error(), "not a valid image reference") {
			t.Errorf("image %q: %v", image, err)
		}
	}
	// An empty or blank image is a missing one, refused as such.
	for _, image := range []string{"", "  "} {
		h := codexContext(testNamespace)
		h.Requirements.Image = image
		if _, err := d.RenderCreateSandbox(h); err == nil || !strings.Contains(err.Error(), "OpenShell requires the Harness image.") {
			t.Errorf("image %q: %v", image, err)
		}
	}
}
