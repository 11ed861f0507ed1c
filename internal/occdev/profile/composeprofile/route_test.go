package composeprofile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// The route's API key is written once per state (O_EXCL, 0600, 48 lowercase hex) and kept on a
// repeated run; a key edited by hand is refused rather than sent to the cluster.
func TestEnsureGatewayKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway-api-key")
	key, err := ensureGatewayKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !gatewayKeyForm.Match(key) {
		t.Errorf("key %q is not 48 lowercase hex", key)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	again, err := ensureGatewayKey(path)
	if err != nil || string(again) != string(key) {
		t.Errorf("a repeated run got %q, %v; want the state's key", again, err)
	}
	if other, _ := ensureGatewayKey(filepath.Join(t.TempDir(), "k")); string(other) == string(key) {
		t.Error("two states share a key")
	}
	if err := os.WriteFile(path, []byte("not-a-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureGatewayKey(path); err == nil || !strings.Contains(err.Error(), "it was edited; run occ dev down and up again") {
		t.Errorf("an edited key: %v", err)
	}
}

// The services' user comes from `id -u && id -g` in their image; anything else is refused.
func TestParseIDs(t *testing.T) {
	if got, err := parseIDs("1000\n1000\n"); err != nil || got.String() != "1000:1000" {
		t.Errorf("parseIDs = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1000\n", "node\nnode\n", "-1\n0\n", "1 2 3"} {
		if _, err := parseIDs(bad); err == nil {
			t.Errorf("parseIDs(%q) accepted", bad)
		}
	}
}

// A reload admits recreated services to the private route only in an environment whose `up`
// set one up (its key Secret is recorded): elsewhere the step is not there to mislead.
func TestReloadAdmitsToTheRouteOnlyWhereItExists(t *testing.T) {
	names := func(st state.State) []string {
		var out []string
		for _, s := range (Profile{}).ReloadSteps(st) {
			out = append(out, s.Name)
		}
		return out
	}
	plain := state.State{Objects: []state.Object{{Type: kubeobj.TypeObject, APIVersion: "v1", Kind: "Secret", Namespace: "openshell-system", Name: "openshell-jwt"}}}
	routed := state.State{Objects: append(slices.Clone(plain.Objects), state.Object{Type: kubeobj.TypeObject, APIVersion: "v1", Kind: "Secret", Namespace: RouteNamespace, Name: kubernetes.GatewayKeySecret})}
	if slices.Contains(names(plain), readmitStep) {
		t.Errorf("without a route the reload lists %q: %q", readmitStep, names(plain))
	}
	got := names(routed)
	if i := slices.Index(got, readmitStep); i < 0 || got[i-1] != "Recreate the services of the rebuilt images" || got[i+1] != "Wait for the API and the worker to be ready" {
		t.Errorf("with a route the reload's steps are %q", got)
	}
}
