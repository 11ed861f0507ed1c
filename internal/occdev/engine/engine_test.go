package engine

import "testing"

// Podman behind the Docker API lists Docker's components beside its own; its own decides. An
// engine that names no registered component is Docker.
func TestRecogniseByTheRegisteredComponent(t *testing.T) {
	for _, c := range []struct {
		components []string
		want       Kind
	}{
		{[]string{"Podman Engine", "Conmon", "OCI Runtime (runc)"}, Podman},
		{[]string{"Engine", "Podman Engine"}, Podman},
		{[]string{"Engine", "containerd", "runc", "docker-init"}, Docker},
		{nil, Docker},
	} {
		if got := Recognise(c.components); got != c.want {
			t.Errorf("Recognise(%q) = %q, want %q", c.components, got, c.want)
		}
	}
}

// A state written before the engine's kind was recorded has none: its engine is Docker. A kind
// no registration has is named by its own string and is not registered, so the state refuses it.
func TestAnEmptyKindIsDockerAndAnUnknownOneIsNotRegistered(t *testing.T) {
	if Kind("").Name() != "Docker" || !Registered("") || Kind("").Registration().Kind != Docker {
		t.Errorf("the empty kind is %+v", Kind("").Registration())
	}
	if Registered("rkt") || Kind("rkt").Name() != "rkt" || Kind("rkt").Registration().API != nil {
		t.Errorf("an unknown kind is %+v", Kind("rkt").Registration())
	}
	if Podman.Registration().API == nil || Docker.Registration().API != nil {
		t.Error("Podman's wrapper or Docker's absence of one is not registered")
	}
}

// Two kinds claiming one name, or one version component, would each drive the other's engines;
// a second kind without a component would take Docker's place as the fallback.
func TestRegisterRefusesAClaimedNameOrComponent(t *testing.T) {
	for name, r := range map[string]Registration{
		"kind":            {Kind: Podman, Name: "Podman again", Component: "Other Engine"},
		"component":       {Kind: "other", Name: "Other", Component: "Podman Engine"},
		"no component":    {Kind: "other", Name: "Other"},
		"malformed kind":  {Kind: "Other Engine", Name: "Other", Component: "Other Engine"},
		"no message name": {Kind: "other", Component: "Other Engine"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register(%+v) did not panic", name, r)
				}
			}()
			Register(r)
		}()
	}
	if Registered("other") {
		t.Error("a refused registration was kept")
	}
}
