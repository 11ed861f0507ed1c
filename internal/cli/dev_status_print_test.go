package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/state"
)

// `occ dev status` prints what the recorded profile reports of its control plane: a profile
// that is not OCE says what it runs on its own line and its services under it, with no OCE
// checkout line; the Compose control plane prints its checkout, project and services as before.
func TestDevStatusPrintsTheProfilesPart(t *testing.T) {
	base := func(name string, cp *profile.Status) *observe.Status {
		return &observe.Status{StateDirectory: "/s", Recorded: true, Profile: name, Cluster: &state.Cluster{Name: "c", Provider: "k3d"}, ControlPlane: cp}
	}
	for _, tc := range []struct {
		name      string
		st        *observe.Status
		want, not []string
	}{
		{"a third profile", base("note", &profile.Status{Runs: "note: ConfigMap note-system/note-profile",
			Services: []profile.ServiceStatus{{Service: "note-profile", State: "present (uid u1)"}}}),
			[]string{"Control plane: note: ConfigMap note-system/note-profile\n", "  note-profile         present (uid u1)\n"}, []string{"OCE checkout:", "Compose:"}},
		{"Compose", base("compose", &profile.Status{Checkout: "/oce", Commit: "abc", ComposeProject: "p",
			Services: []profile.ServiceStatus{{Service: "controller", State: "running (healthy)"}}, ServicesProblem: ""}),
			[]string{"OCE checkout:  /oce at abc\nCompose:       project p\n  controller           running (healthy)\n"}, []string{"Control plane:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printDevStatus(&Globals{Stdout: &out}, tc.st); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("want %q in:\n%s", w, out.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out.String(), n) {
					t.Errorf("want no %q in:\n%s", n, out.String())
				}
			}
		})
	}
}

// `occ dev status` reads in one screen: the objects are counted by state, and only those that
// are not present are listed; -v lists every one.
func TestDevStatusCountsTheObjectsAndListsTheOdd(t *testing.T) {
	st := &observe.Status{StateDirectory: "/s", Recorded: true, Profile: "kubernetes", Cluster: &state.Cluster{Name: "c", Provider: "k3d"}, Objects: []observe.ObjectStatus{
		{Kind: "Namespace", Name: "openshell-system", State: state.Present},
		{Kind: "Secret", Namespace: "openshell-system", Name: "jwt", State: state.Present},
		{Kind: "ConfigMap", Namespace: "openshell-system", Name: "gone", State: "missing"},
	}}
	var out bytes.Buffer
	if err := printDevStatus(&Globals{Stdout: &out}, st); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "Objects:       3 recorded: 2 present, 1 missing\n") || !strings.Contains(s, "gone") || strings.Contains(s, "jwt") {
		t.Errorf("the default lists only the missing object, after the counts:\n%s", s)
	}
	out.Reset()
	if err := printDevStatus(&Globals{Stdout: &out, Verbosity: 1}, st); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "jwt") || !strings.Contains(s, "openshell-system") || !strings.Contains(s, "gone") {
		t.Errorf("-v lists every object:\n%s", s)
	}
}
