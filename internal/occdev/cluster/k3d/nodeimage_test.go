package k3d

import (
	"errors"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// OCC_DEVELOPMENT_K3S_IMAGE set to a release channel, a tag that names no k3s release, a
// Kubernetes older than the floor, or with the existing-cluster provider: each is a bad setting
// naming the variable; a release by tag or digest replaces the pinned node image in a copy of
// the pins only.
func TestSelectNodeImage(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	pinned := set.K3s.Image
	for _, tc := range []struct{ provider, value, want string }{
		{"existing", "rancher/k3s:v1.35.8-k3s1", `OCC_DEVELOPMENT_K3S_IMAGE "rancher/k3s:v1.35.8-k3s1" selects the node image of the k3d cluster occ creates, and --cluster-provider existing creates none`},
		{Name, "+v1.35", `OCC_DEVELOPMENT_K3S_IMAGE "+v1.35" is a k3s release channel`},
		{Name, "rancher/k3s:latest", "has no k3s release tag"},
		{Name, "rancher/k3s@sha256:" + strings.Repeat("a", 64), "has no k3s release tag"},
		{Name, "rancher/k3s:v1.34.2-k3s1", "runs Kubernetes v1.34.2; the cluster needs Kubernetes 1.35 or newer"},
		{Name, "Rancher/K3S:v1.35.8-k3s1", "is not an image reference"},
	} {
		_, _, err := SelectNodeImage(tc.provider, tc.value, set)
		var oe *option.Error
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want an option error saying %q", tc.provider, tc.value, err, tc.want)
		}
	}
	if got, sel, err := SelectNodeImage("existing", "", set); err != nil || got != set || sel != nil {
		t.Errorf("unset: %v, %+v, %v; want the pins as they are", got, sel, err)
	}
	byDigest := "registry.example:5000/mirror/k3s:v1.35.8-k3s1@sha256:" + strings.Repeat("b", 64)
	for value, tag := range map[string]bool{byDigest: false, "rancher/k3s:v1.36.1-k3s2": true} {
		got, sel, err := SelectNodeImage(Name, value, set)
		if err != nil || sel == nil || sel.Image != value || sel.Tag != tag || got == set || got.K3s.Image == pinned {
			t.Errorf("%s: %+v, %v; want a copy of the pins with it, selected by tag %v", value, sel, err, tag)
		}
	}
	if set.K3s.Image != pinned {
		t.Errorf("selecting a node image changed the pin set: %s", set.K3s.Image)
	}
}
