package occdev

import (
	"testing"
	"time"
)

// Profiles decide namespace and Service; bad values are option errors before anything runs.
func TestResolvePlan(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	p, err := resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev"})
	if err != nil {
		t.Fatal(err)
	}
	if p.ControlPlane != ControlPlaneCompose || p.Namespace != "openshell-system" || p.ServiceType != "NodePort" || p.NodePort != 30051 || p.StartupTimeout != 600*time.Second || p.ClusterProvider != "existing" {
		t.Errorf("default plan: %+v", p)
	}
	p, err = resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", ControlPlane: ControlPlaneKubernetes})
	if err != nil || p.Namespace != "oce-system" || p.ServiceType != "ClusterIP" || p.NodePort != 0 {
		t.Errorf("kubernetes plan: %+v, %v", p, err)
	}
	for _, o := range []UpOptions{{ClusterProvider: "k3d"}, {ControlPlane: "swarm"}, {Namespace: "UPPER"}, {StartupTimeout: time.Millisecond}} {
		if _, err := resolvePlan(o); err == nil {
			t.Errorf("%+v accepted", o)
		} else if _, ok := err.(*OptionError); !ok {
			t.Errorf("%+v: %T is not an OptionError", o, err)
		}
	}
}

// The printed commands survive being pasted into a shell.
func TestDownCommandQuoting(t *testing.T) {
	if got := DownCommand("", "/home/dev/.local/state/occ/dev"); got != "occ dev down --state-dir /home/dev/.local/state/occ/dev" {
		t.Errorf("plain: %s", got)
	}
	if got := DownCommand("/opt/my tools/occ", "/tmp/it's here"); got != `'/opt/my tools/occ' dev down --state-dir '/tmp/it'\''s here'` {
		t.Errorf("quoted: %s", got)
	}
}
