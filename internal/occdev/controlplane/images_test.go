package controlplane

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pins"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// A developer exports only OCC_DEVELOPMENT_CONTROLLER_IMAGE (or only the runtime image): the
// profile refuses, with the reference's sentence, before anything is built or created.
func TestSelectionBothOrNeither(t *testing.T) {
	for _, sel := range []ImageSelection{
		{Controller: "example.com/oce/controller@" + testDigest},
		{Runtime: "example.com/oce/runtime@" + testDigest},
	} {
		err := sel.Validate()
		if err == nil {
			t.Fatalf("Validate(%+v) accepted a half selection", sel)
		}
		msg := err.Error()
		for _, want := range []string{msgSelectTogether, EnvControllerImage, EnvRuntimeImage, "unset both"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not contain %q", msg, want)
			}
		}
	}
	if err := (ImageSelection{}).Validate(); err != nil {
		t.Fatalf("an empty selection (build from the checkout) was refused: %v", err)
	}
	both := ImageSelection{Controller: "example.com/oce/controller@" + testDigest, Runtime: "example.com/oce/runtime:v1@" + testDigest}
	if err := both.Validate(); err != nil {
		t.Fatalf("a complete digest selection was refused: %v", err)
	}
}

// A developer selects images by tag (openclaw-enterprise-controller:dev): a tag can move, so the
// selection is refused with the reference's sentence naming each offending variable.
func TestSelectionDigestsOnly(t *testing.T) {
	cases := []struct {
		sel     ImageSelection
		naming  []string
		exclude string
	}{
		{ImageSelection{Controller: "openclaw-enterprise-controller:dev", Runtime: "example.com/oce/runtime@" + testDigest}, []string{EnvControllerImage, "openclaw-enterprise-controller:dev"}, EnvRuntimeImage + "="},
		{ImageSelection{Controller: "example.com/oce/controller@" + testDigest, Runtime: "runtime"}, []string{EnvRuntimeImage, `"runtime"`}, EnvControllerImage + "="},
		{ImageSelection{Controller: "c:1", Runtime: "r@sha256:abc"}, []string{EnvControllerImage, EnvRuntimeImage, "digest"}, ""},
	}
	for _, c := range cases {
		err := c.sel.Validate()
		if err == nil {
			t.Fatalf("Validate(%+v) accepted a tag reference", c.sel)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, msgDigestsOnly) {
			t.Errorf("error %q does not start with the reference sentence", msg)
		}
		for _, want := range c.naming {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not name %q", msg, want)
			}
		}
		if c.exclude != "" && strings.Contains(msg, c.exclude) {
			t.Errorf("error %q blames the valid variable too", msg)
		}
	}
}

// The controller build takes the pinned Node base unless OCC_DEVELOPMENT_NODE_BASE_IMAGE
// names another immutable image; a tag there is refused naming the variable.
func TestNodeBaseImage(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	got, err := NodeBaseImage("", set.OCE.NodeBaseImage)
	if err != nil || got != set.OCE.NodeBaseImage.String() {
		t.Fatalf("NodeBaseImage(default) = %q, %v", got, err)
	}
	override := "registry.example/node:24@" + testDigest
	if got, err := NodeBaseImage(override, set.OCE.NodeBaseImage); err != nil || got != override {
		t.Fatalf("NodeBaseImage(override) = %q, %v", got, err)
	}
	_, err = NodeBaseImage("node:24-bookworm", set.OCE.NodeBaseImage)
	if err == nil || !strings.Contains(err.Error(), EnvNodeBaseImage) || !strings.Contains(err.Error(), "node:24-bookworm") {
		t.Fatalf("NodeBaseImage(tag) error = %v, want one naming %s and the value", err, EnvNodeBaseImage)
	}
}

// OCC_DEVELOPMENT_POSTGRES_IMAGE replaces the pinned PostgreSQL, by digest only.
func TestPostgresImage(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := PostgresImage("", set.OCE.PostgresImage); err != nil || got != set.OCE.PostgresImage.String() {
		t.Fatalf("PostgresImage(default) = %q, %v", got, err)
	}
	override := "registry.example/postgres:18.6@" + testDigest
	if got, err := PostgresImage(override, set.OCE.PostgresImage); err != nil || got != override {
		t.Fatalf("PostgresImage(override) = %q, %v", got, err)
	}
	if _, err := PostgresImage("postgres:18.6", set.OCE.PostgresImage); err == nil || !strings.Contains(err.Error(), EnvPostgresImage) {
		t.Fatalf("PostgresImage(tag) error = %v", err)
	}
}
