package locate

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// A laptop with Docker and Podman both running: auto takes Docker, as the reference does; with
// only Podman running (Docker's socket missing), auto takes Podman and says where Docker was
// looked for.
func TestAutoPrefersDockerThenPodman(t *testing.T) {
	env, _ := testEnv(t, 1000, nil)
	env.Getenv = vars{"XDG_RUNTIME_DIR": filepath.Join(env.SystemRoot, "run", "user", "1000")}.get
	rootless := filepath.Join(env.SystemRoot, "run", "user", "1000", "podman", "podman.sock")
	fakeEngine(t, rootless, podmanVersionJSON)
	ctx := context.Background()

	loc, err := Find(ctx, Options{Env: env})
	if err != nil || loc.Kind != engine.Podman || loc.Endpoint.Socket != rootless || !strings.HasPrefix(loc.Source, "the rootless Podman socket") || loc.Version != "4.3.1" {
		t.Fatalf("only Podman runs: %+v %v", loc, err)
	}
	if len(loc.Skipped) != 1 || loc.Skipped[0].Kind != engine.Docker || !strings.Contains(loc.Skipped[0].Reason, "does not exist") {
		t.Errorf("only Podman runs: skipped %+v, want Docker's missing default socket", loc.Skipped)
	}
	if got := loc.String(); got != "Podman 4.3.1 at unix://"+rootless+" (from the rootless Podman socket ($XDG_RUNTIME_DIR/podman/podman.sock))" {
		t.Errorf("summary %q", got)
	}

	fakeEngine(t, env.system(DefaultDockerSocket), dockerVersionJSON)
	loc, err = Find(ctx, Options{Choice: Auto, Env: env})
	if err != nil || loc.Kind != engine.Docker || loc.Endpoint.Socket != env.system(DefaultDockerSocket) || loc.Version != "28.5.2" || len(loc.Skipped) != 0 {
		t.Fatalf("both run: %+v %v; want Docker", loc, err)
	}
	loc, err = Find(ctx, Options{Choice: ChoosePodman, Env: env})
	if err != nil || loc.Kind != engine.Podman || loc.Endpoint.Socket != rootless {
		t.Fatalf("both run, --engine podman: %+v %v", loc, err)
	}
}

// DOCKER_HOST pointing at a Podman socket (what k3d's Podman guide has users set), or
// podman-docker's /var/run/docker.sock: auto reports the engine as Podman; --engine docker
// refuses it, saying what it is and what to do.
func TestPodmanBehindDockersPlaceIsPodman(t *testing.T) {
	env, root := testEnv(t, 1000, nil)
	sock := filepath.Join(root, "podman.sock")
	fakeEngine(t, sock, podmanVersionJSON)
	env.Getenv = vars{EnvDockerHost: "unix://" + sock}.get
	ctx := context.Background()

	loc, err := Find(ctx, Options{Env: env})
	if err != nil || loc.Kind != engine.Podman || loc.Source != EnvDockerHost || loc.Endpoint.Socket != sock {
		t.Fatalf("auto with DOCKER_HOST at Podman: %+v %v; want Podman from DOCKER_HOST", loc, err)
	}
	_, err = Find(ctx, Options{Choice: ChooseDocker, ChoiceSource: ChoiceEnv, Env: env})
	var ke *KindError
	if !errors.As(err, &ke) || ke.Found.Kind != engine.Podman {
		t.Fatalf("--engine docker with DOCKER_HOST at Podman: %v, want a KindError", err)
	}
	t.Logf("the message: %s", err)
	for _, want := range []string{ChoiceEnv + " docker", "unix://" + sock, "(from DOCKER_HOST)", "is Podman 4.3.1, not Docker", "--engine podman"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("KindError %q lacks %q", err, want)
		}
	}

	// The other way round: CONTAINER_HOST at a Docker engine with --engine podman.
	dsock := filepath.Join(root, "docker.sock")
	fakeEngine(t, dsock, dockerVersionJSON)
	env.Getenv = vars{EnvContainerHost: "unix://" + dsock}.get
	if _, err := Find(ctx, Options{Choice: ChoosePodman, Env: env}); !errors.As(err, &ke) || !strings.Contains(err.Error(), "is Docker 28.5.2, not Podman") {
		t.Errorf("--engine podman with CONTAINER_HOST at Docker: %v", err)
	}
}

// Nothing runs: the error lists every place with what is wrong and what to start there —
// Docker's default socket, the rootless and the rootful Podman sockets — in the order tried.
func TestNothingRunningSaysWhatToStart(t *testing.T) {
	env, _ := testEnv(t, 1000, vars{})
	staleSocket(t, env.system(RootfulPodmanSocket))
	_, err := Find(context.Background(), Options{Env: env})
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Attempts) != 3 {
		t.Fatalf("nothing runs: %v", err)
	}
	msg := err.Error()
	t.Logf("the message:\n%s", msg)
	for _, want := range []string{
		"no usable container engine (Docker or Podman) for --engine auto; looked at:",
		"Docker at unix://" + env.system(DefaultDockerSocket) + " (from the default Docker socket): the socket " + env.system(DefaultDockerSocket) + " does not exist; start Docker with `sudo systemctl start docker`",
		"(from the rootless Podman socket ($XDG_RUNTIME_DIR/podman/podman.sock)): the socket " + env.system("/run/user/1000/podman/podman.sock") + " does not exist; start it with `systemctl --user start podman.socket`",
		"Podman at unix://" + env.system(RootfulPodmanSocket) + " (from the rootful Podman socket): nothing accepts connections on " + env.system(RootfulPodmanSocket) + " (a stale socket of a stopped engine); start it with `sudo systemctl start podman.socket`",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Index(msg, "Docker at") > strings.Index(msg, "rootless") || strings.Index(msg, "rootless") > strings.Index(msg, "rootful") {
		t.Errorf("places not in the order tried:\n%s", msg)
	}

	_, err = Find(context.Background(), Options{Choice: ChooseDocker, Env: env})
	if !errors.As(err, &nf) || len(nf.Attempts) != 1 || !strings.HasPrefix(err.Error(), "no usable Docker engine for --engine docker") {
		t.Errorf("--engine docker, nothing runs: %v", err)
	}
}

// A stale docker context in config.json does not stop `auto` from finding Podman; with
// --engine docker it is the reason given.
func TestStaleDockerContextFallsThroughToPodman(t *testing.T) {
	env, _ := testEnv(t, 0, vars{})
	writeFile(t, filepath.Join(env.Home, ".docker", "config.json"), `{"currentContext":"desktop-linux"}`)
	fakeEngine(t, env.system(RootfulPodmanSocket), podmanVersionJSON)
	loc, err := Find(context.Background(), Options{Env: env})
	if err != nil || loc.Kind != engine.Podman || loc.Source != "the rootful Podman socket" || len(loc.Skipped) != 1 || !strings.Contains(loc.Skipped[0].Reason, `does not exist in the docker context store`) {
		t.Fatalf("stale context, Podman running: %+v %v", loc, err)
	}
	_, err = Find(context.Background(), Options{Choice: ChooseDocker, Env: env})
	if err == nil || !strings.Contains(err.Error(), `docker context "desktop-linux"`) || !strings.Contains(err.Error(), "docker context use") {
		t.Errorf("stale context, --engine docker: %v", err)
	}
}

// A cancelled `occ dev up` stops locating at once and says so, rather than listing places.
func TestFindHonoursCancellation(t *testing.T) {
	env, _ := testEnv(t, 1000, vars{})
	staleSocket(t, env.system(DefaultDockerSocket))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Find(ctx, Options{Env: env})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
