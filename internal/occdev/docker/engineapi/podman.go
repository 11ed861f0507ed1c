package engineapi

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
)

// Podman is the API of a Podman engine reached through the Docker client c: c with the calls
// where Podman's answers differ made to answer as Docker's do. It is Podman's registered wrapper
// (engine.Registration.API).
func Podman(c API) API { return podmanAPI{API: c} }

// podmanAPI is a Podman engine through its Docker-compatible API: the Docker client, with the
// calls where Podman's answers mean something else than Docker's made to answer as Docker's do,
// so that nothing above this package asks which engine it drives.
type podmanAPI struct {
	API
}

var _ API = podmanAPI{}

// ImageInspect of a digest reference lists that reference among the image's RepoDigests when the
// image holds a manifest of that digest, as Docker does for an image pulled by that reference.
// Podman resolves a digest reference to the local image holding a manifest of that digest,
// whatever the image's names, and lists RepoDigests as every repository name of the image crossed
// with every manifest digest it holds: an image pulled once under one name, or loaded under its
// localhost/ name, shows the pinned digest under those names and not necessarily under the one
// asked for. An engine holds a manifest digest only for a manifest it pulled or pushed, and the
// digest names the content, so the digest under any of the image's names is the proof Docker's
// entry gives.
func (p podmanAPI) ImageInspect(ctx context.Context, ref string, opts ...ImageInspectOption) (image.InspectResponse, error) {
	ins, err := p.API.ImageInspect(ctx, ref, opts...)
	if err != nil {
		return ins, err
	}
	_, digest, ok := strings.Cut(ref, "@")
	if !ok || slices.Contains(ins.RepoDigests, ref) {
		return ins, nil
	}
	for _, rd := range ins.RepoDigests {
		if _, d, _ := strings.Cut(rd, "@"); d == digest {
			ins.RepoDigests = append(slices.Clone(ins.RepoDigests), ref)
			break
		}
	}
	return ins, nil
}

// ContainerInspect of a container whose process is exiting at that moment may fail on Podman
// before 4.4 with "read /proc/<pid>/cgroup: no such process": the engine still holds the
// container as running, opens the process's cgroup file, and the process exits before the read
// (the kernel answers ESRCH; later Podman reads that as a stopped container). The container is
// fine and the next inspect, once the engine has noticed the exit, answers; so the call is made
// again, a bounded number of times, while it fails that way alone. Docker never answers so.
func (p podmanAPI) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	var (
		ins container.InspectResponse
		err error
	)
	for try := 0; ; try++ {
		ins, err = p.API.ContainerInspect(ctx, id)
		if err == nil || !exitRace(err) || try+1 >= exitRaceTries {
			return ins, err
		}
		t := time.NewTimer(exitRaceBackoff << try)
		select {
		case <-ctx.Done():
			t.Stop()
			return ins, err
		case <-t.C:
		}
	}
}

// exitRaceTries bounds the inspects of a container caught exiting; with exitRaceBackoff doubling
// between them, they span about 1.5 s, far longer than the engine takes to notice an exit.
const (
	exitRaceTries   = 6
	exitRaceBackoff = 50 * time.Millisecond
)

// exitRace reports whether err is Podman's answer for a process that exited while the engine read
// its cgroup file: "read /proc/<pid>/cgroup: no such process".
func exitRace(err error) bool {
	msg := err.Error()
	i := strings.Index(msg, "read /proc/")
	if i < 0 {
		return false
	}
	pid, rest, ok := strings.Cut(msg[i+len("read /proc/"):], "/")
	if !ok || pid == "" || strings.Trim(pid, "0123456789") != "" {
		return false
	}
	return strings.HasPrefix(rest, "cgroup: no such process")
}
