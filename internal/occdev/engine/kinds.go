package engine

import "github.com/openclaw/occ/internal/occdev/docker/engineapi"

// The kinds occ drives, by the names the state records.
const (
	Docker Kind = "docker"
	Podman Kind = "podman"
)

// The registrations of the kinds occ drives, one line each. An engine of another kind that speaks
// the Docker API is one more line here (or in the package that brings it): its name, its version
// component, its wrapper and its answers to the flow's questions.
var _ = []Registration{
	Register(Registration{Kind: Docker, Name: "Docker", PermissionFix: "add your user to the docker group (`sudo usermod -aG docker $USER`, then log in again), or point DOCKER_HOST at a socket you may open (a rootless engine's)", Builder: BuildKit, StableID: true, ResolvesTags: true, ClassicStore: true}),
	Register(Registration{Kind: Podman, Name: "Podman", Component: "Podman Engine", API: engineapi.Podman, PermissionFix: "use the rootless Podman socket (`systemctl --user start podman.socket`), run occ as the socket's owner, or point CONTAINER_HOST at a socket you may open", PodmanSocket: true, K3dPodman: true, ComposePodman: true, Builder: Buildah}),
}
