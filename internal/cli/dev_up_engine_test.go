package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// The summary names the network of the engine the cluster runs in: Podman's on Podman, Docker's
// otherwise (and for a summary without a kind).
func TestUpSummaryNamesTheEngineNetwork(t *testing.T) {
	for kind, want := range map[engine.Kind]string{"podman": "Podman", "docker": "Docker", "": "Docker"} {
		sum := &occdev.Summary{Engine: "x", EngineKind: kind, ClusterProvider: "k3d", Cluster: "occ-dev-abc", Kubeconfig: "/s/kubeconfig",
			ContainerKubeconfig: "/s/container-kubeconfig", StateDirectory: "/s", DownCommand: occdev.DownCommand("occ", "/s")}
		var out bytes.Buffer
		if err := printUpSummary(&out, sum); err != nil {
			t.Fatal(err)
		}
		if line := "/s/container-kubeconfig (kubeconfig for containers on the cluster's " + want + " network)"; !strings.Contains(out.String(), line) {
			t.Errorf("kind %q: summary lacks %q:\n%s", kind, line, out.String())
		}
	}
}

// With the automatic engine choice and nothing answering anywhere (DOCKER_HOST and
// CONTAINER_HOST both name sockets of stopped engines), the dry run and up name every place
// looked at with what each said, Podman's included, not only what to start for Docker; nothing
// is created.
func TestNoEngineAnywhereNamesEveryPlace(t *testing.T) {
	dir := isolate(t)
	dockerSock, podmanSock := filepath.Join(dir, "docker.sock"), filepath.Join(dir, "podman.sock")
	t.Setenv("DOCKER_HOST", "unix://"+dockerSock)
	t.Setenv("CONTAINER_HOST", "unix://"+podmanSock)
	state := filepath.Join(dir, "state")
	for _, args := range [][]string{
		{"dev", "up", "--dry-run", "--cluster-provider", "k3d", "--state-dir", state},
		{"dev", "up", "--cluster-provider", "k3d", "--state-dir", state},
	} {
		var out bytes.Buffer
		code := Execute(context.Background(), args, strings.NewReader(""), &out, &out)
		for _, want := range []string{
			"no usable container engine (Docker or Podman) for --engine auto; looked at:",
			"Docker at unix://" + dockerSock + " (from DOCKER_HOST)",
			"Podman at unix://" + podmanSock + " (from CONTAINER_HOST)",
		} {
			if code == 0 || !strings.Contains(out.String(), want) {
				t.Errorf("occ %s: exit %d, want it to say %q:\n%s", strings.Join(args, " "), code, want, out.String())
			}
		}
		if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("occ %s created the state directory (%v)", strings.Join(args, " "), err)
		}
	}
}

// clikind is an engine kind registered by these tests alone, as a package bringing an engine
// that speaks the Docker API would register it.
var clikind = engine.Register(engine.Registration{Kind: "clikind", Name: "Clikind", Component: "Clikind Engine", Builder: engine.BuildKit})

// `occ dev up --engine clikind`: every registered kind is a choice of --engine (it is looked
// for where Docker is, not at Podman's places, and its absence named by its registration), and
// a value no kind has is refused naming every choice the registry holds.
func TestEngineChoicesAreTheRegisteredKinds(t *testing.T) {
	dir := isolate(t)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "docker.sock"))
	state := filepath.Join(dir, "state")
	for value, want := range map[string]string{
		string(clikind.Kind): "no usable Clikind engine for --engine clikind; looked at:",
		"rkt":                `--engine "rkt" is not a container engine choice (auto, docker, podman or clikind)`,
	} {
		var out bytes.Buffer
		code := Execute(context.Background(), []string{"dev", "up", "--dry-run", "--cluster-provider", "k3d", "--state-dir", state, "--engine", value}, strings.NewReader(""), &out, &out)
		if code == 0 || !strings.Contains(out.String(), want) || strings.Contains(out.String(), "Podman at ") {
			t.Errorf("--engine %s: exit %d, want it to say %q and look at no Podman place:\n%s", value, code, want, out.String())
		}
	}
}
