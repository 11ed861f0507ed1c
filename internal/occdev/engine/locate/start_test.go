package locate

import (
	"path/filepath"
	"strings"
	"testing"
)

// A recorded Podman engine that stopped is started again where it listened, with the words Find
// uses for that place, whatever CONTAINER_HOST says now.
func TestPodmanStartNamesThePlace(t *testing.T) {
	env, root := testEnv(t, 1000, vars{"XDG_RUNTIME_DIR": "/run/user/1000", EnvContainerHost: "unix:///elsewhere.sock"})
	if got := PodmanStart(env, "/run/user/1000/podman/podman.sock"); got != "start it with `systemctl --user start podman.socket`" {
		t.Errorf("rootless socket: %q", got)
	}
	rootful := env.system(RootfulPodmanSocket)
	if got := PodmanStart(env, rootful); !strings.HasPrefix(got, "start it with `sudo systemctl start podman.socket`") {
		t.Errorf("rootful socket as a user: %q", got)
	}
	env.UID = func() int { return 0 }
	if got := PodmanStart(env, rootful); got != "start it with `systemctl start podman.socket`" {
		t.Errorf("rootful socket as root: %q", got)
	}
	machine := filepath.Join(env.Home, ".local", "share", "containers", "podman", "machine", "podman.sock")
	if got := PodmanStart(env, machine); got != "start the machine with `podman machine start podman-machine-default`" {
		t.Errorf("machine socket: %q", got)
	}
	other := filepath.Join(root, "srv", "podman.sock")
	if got := PodmanStart(env, other); got != "start Podman's API service on it (`podman system service --time=0 unix://"+other+"`)" {
		t.Errorf("socket of no known place: %q", got)
	}
}
