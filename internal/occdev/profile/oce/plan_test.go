package oce

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// document is a profile's plan document, building the Dockerfiles it holds.
type document []*controlplane.Dockerfile

func (document) PrintPlan(io.Writer)                       {}
func (d document) Dockerfiles() []*controlplane.Dockerfile { return d }

// `occ dev up --dry-run` with selected images contacts no engine for the builder check; with a
// checkout to build and the engine gone, it reports that it cannot ask it.
func TestCheckPlannedBuilderAsksTheEngineOnlyWhenSomethingIsBuilt(t *testing.T) {
	gone := docker.Endpoint{Socket: filepath.Join(t.TempDir(), "docker.sock")}
	if err := CheckPlannedBuilder(document(nil), gone, "DOCKER_HOST", engine.Docker); err != nil {
		t.Errorf("nothing to build: %v, want no check", err)
	}
	if err := CheckPlannedBuilder(nil, gone, "DOCKER_HOST", engine.Docker); err != nil {
		t.Errorf("no control plane: %v, want no check", err)
	}
	err := CheckPlannedBuilder(document{{Path: "Dockerfile"}}, gone, "DOCKER_HOST", engine.Docker)
	if err == nil || !strings.Contains(err.Error(), gone.Socket) {
		t.Errorf("a build and no engine: %v, want the engine's socket named", err)
	}
}
