package controlplane

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
)

const (
	fixtureRoot = "../../../testdata/oce-checkout"
	slimDigest  = "docker.io/library/node:24-bookworm-slim@sha256:3638d9a6fe4030bd716be989438248074489337ba3275657f93595428be4fc03"
	fullDefault = "docker.io/library/node:24-bookworm@sha256:934240a162082fd8b8a2f90cd5114446443f1eba1c5378f6687167ca405e6584"
	pinnedNode  = "docker.io/library/node:24-bookworm@sha256:3d27e5c11e5786e309ec3e03f93ae536eb36e6e5eb3714d5eb3300a36157add0"
)

func useLines(uses []BaseUse) []int {
	var out []int
	for _, u := range uses {
		out = append(out, u.Line)
	}
	return out
}

// The controller build of the Kubernetes-only profile (the root Dockerfile's runtime target,
// NODE_BASE_IMAGE passed): its runtime stage is FROM ${NODE_RUNTIME_BASE_IMAGE}, whose digest
// default the build fetches besides the Node base of the dependencies stage it copies from; the
// development target of the Compose profile fetches only the Node base.
func TestControllerBuildFetchesBothNodeBases(t *testing.T) {
	df, err := ParseDockerfile(fixtureRoot, ControllerDockerfile)
	if err != nil {
		t.Fatal(err)
	}
	uses, err := df.Bases(ControllerTarget, map[string]string{NodeBaseImageArg: pinnedNode})
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) != 2 || uses[0].Image != pinnedNode || uses[0].Arg != NodeBaseImageArg || uses[0].Stage != "dependencies" ||
		uses[1].Image != slimDigest || uses[1].Arg != NodeRuntimeBaseImageArg || uses[1].Stage != "runtime" || uses[1].Written != "FROM ${NODE_RUNTIME_BASE_IMAGE}" {
		t.Fatalf("bases of the runtime target: %+v", uses)
	}
	if got := uses[1].String(); got != "Dockerfile:42 (stage runtime, FROM ${NODE_RUNTIME_BASE_IMAGE})" {
		t.Errorf("use reads %q", got)
	}
	dev, err := df.Bases("development", map[string]string{NodeBaseImageArg: "docker.io/library/node:24-bookworm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(dev) != 1 || dev[0].Image != "docker.io/library/node:24-bookworm" || dev[0].Stage != "dependencies" {
		t.Fatalf("bases of the development target: %+v", dev)
	}
	// Without NODE_BASE_IMAGE (it has no default) the base is empty, and refused by name.
	_, err = df.Bases(ControllerTarget, nil)
	var be *BaseError
	if !errors.As(err, &be) || be.Use.Arg != NodeBaseImageArg || !strings.Contains(err.Error(), "Dockerfile:10 (stage dependencies, FROM ${NODE_BASE_IMAGE}): expands to an empty image reference") {
		t.Fatalf("no NODE_BASE_IMAGE: %v", err)
	}
	if _, err := df.Bases("prod", nil); err == nil || !strings.Contains(err.Error(), `Dockerfile has no stage "prod" to build (its stages: dependencies, console-build, development, runtime)`) {
		t.Fatalf("unknown target: %v", err)
	}
}

// The Agent runtime build (deploy/runtime/Dockerfile, no target, no arguments) follows its
// stages through FROM <stage>, COPY --from and RUN --mount from=: it fetches the two Node bases
// of its ARG defaults, through every stage the runtime stage needs, and not the base of the
// repository-credentials-service stage it does not need; the here-document and the mounts are
// found with their lines.
func TestRuntimeBuildFollowsStagesAndFindsTheHeredoc(t *testing.T) {
	df, err := ParseDockerfile(fixtureRoot, RuntimeDockerfile)
	if err != nil {
		t.Fatal(err)
	}
	uses, err := df.Bases("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := useLines(uses), []int{13, 29, 36, 39, 68}; !slices.Equal(got, want) {
		t.Fatalf("base lines %v, want %v (%+v)", got, want, uses)
	}
	for _, u := range uses {
		want := fullDefault
		if u.Line == 13 || u.Line == 68 {
			want = slimDigest
		}
		if u.Image != want {
			t.Errorf("%s fetches %s, want %s", u, u.Image, want)
		}
	}
	heredocs := df.Uses(FeatureHeredoc)
	if len(heredocs) != 1 || heredocs[0].Line != 61 || heredocs[0].Text != "RUN node --input-type=module <<'NODE'" {
		t.Fatalf("here-documents: %+v", heredocs)
	}
	if mounts := df.Uses(FeatureRunMount); len(mounts) != 4 {
		t.Fatalf("RUN --mount uses: %+v", mounts)
	}
	// A build argument replaces a declared default; one the file does not declare changes nothing.
	uses, err = df.Bases("", map[string]string{NodeRuntimeBaseImageArg: "registry.example/node-slim@sha256:" + strings.Repeat("a", 64), "UNDECLARED": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if uses[0].Image != "registry.example/node-slim@sha256:"+strings.Repeat("a", 64) || uses[1].Image != fullDefault {
		t.Fatalf("with arguments: %+v", uses)
	}
}

// Shapes the real files do not have today but a checkout may: FROM scratch (nothing fetched), a
// stage referenced by index, an image named by COPY --from, a default built from another ARG, a
// tag written into FROM (refused when collected), a # syntax= directive and an unreadable file.
func TestDockerfileShapes(t *testing.T) {
	df, err := parseDockerfile("Dockerfile", []byte(`# syntax=docker/dockerfile:1.7
ARG REGISTRY=registry.example
ARG BASE=${REGISTRY}/base@sha256:`+strings.Repeat("b", 64)+`
FROM ${BASE}
RUN --network=none true
FROM scratch AS out
COPY --from=0 /etc /etc
COPY --link --from=registry.example/tools:1 /bin/tool /tool
FROM debian:12 AS unused
`))
	if err != nil {
		t.Fatal(err)
	}
	if df.Syntax != "docker/dockerfile:1.7" || df.SyntaxLine != 1 {
		t.Errorf("syntax %q at %d", df.Syntax, df.SyntaxLine)
	}
	uses, err := df.Bases("out", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) != 2 || uses[0].Image != "registry.example/base@sha256:"+strings.Repeat("b", 64) || uses[0].Arg != "BASE" ||
		uses[1].Image != "registry.example/tools:1" || uses[1].Written != "COPY --from=registry.example/tools:1" || uses[1].Arg != "" {
		t.Fatalf("bases: %+v", uses)
	}
	if len(df.Uses(FeatureRunNetwork)) != 1 || len(df.Uses(FeatureCopyLink)) != 1 {
		t.Errorf("features: %+v", df.Features)
	}
	_, err = CollectBases([]*PlannedBuild{{Bases: uses, File: df}})
	if err == nil || !strings.Contains(err.Error(), "names registry.example/tools:1 by tag in the Dockerfile itself") {
		t.Fatalf("a tag written in the Dockerfile: %v", err)
	}
	if err := CheckSyntax([]*Dockerfile{df}); err == nil || !strings.Contains(err.Error(), "Dockerfile:1 (# syntax=docker/dockerfile:1.7)") || !strings.Contains(err.Error(), EnvControllerImage) {
		t.Errorf("syntax directive: %v", err)
	}
	if _, err := parseDockerfile("Dockerfile", []byte("FROM alpine\nRUN --bogus true\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("an unknown flag: %v", err)
	}
	if _, err := ParseDockerfile(t.TempDir(), "Dockerfile"); err == nil || !strings.Contains(err.Error(), filepath.Join("Dockerfile")) {
		t.Errorf("a missing file: %v", err)
	}
}

// Docker Engine 20.10 (API 1.41, Debian's docker.io) is refused for the checkout's Dockerfiles,
// naming the engine, the here-document's file and line and both fixes; an engine of API 1.42 or
// later (Docker Engine 23.0+) is accepted, and RUN --mount alone needs only BuildKit.
func TestCheckBuilder(t *testing.T) {
	root, runtime := fixtureDockerfiles(t)
	old := engine.Identity{Version: "20.10.24+dfsg1", APIVersion: "1.41"}
	err := CheckBuilder(old, []*Dockerfile{root, runtime})
	var be *BuilderError
	if !errors.As(err, &be) {
		t.Fatalf("20.10: %v", err)
	}
	for _, want := range []string{"Docker Engine 20.10.24+dfsg1 (API 1.41)", "the here-document at deploy/runtime/Dockerfile:61 (RUN node --input-type=module <<'NODE')",
		"Upgrade to Docker Engine 23.0 or later", EnvControllerImage + " and " + EnvRuntimeImage, "nothing was created"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "RUN --mount") {
		t.Errorf("RUN --mount is refused on an engine with BuildKit:\n%v", err)
	}
	if err := CheckBuilder(old, []*Dockerfile{root}); err != nil {
		t.Errorf("the root Dockerfile (RUN --mount only) on 20.10: %v", err)
	}
	for _, api := range []string{"1.42", "1.51"} {
		if err := CheckBuilder(engine.Identity{Version: "28.5.2", APIVersion: api}, []*Dockerfile{root, runtime}); err != nil {
			t.Errorf("API %s: %v", api, err)
		}
	}
	if err := CheckBuilder(engine.Identity{Version: "dev", APIVersion: "next"}, []*Dockerfile{runtime}); err == nil || !strings.Contains(err.Error(), `API version "next"`) {
		t.Errorf("an unreadable API version: %v", err)
	}
}

// A developer on Podman 4.3 (Debian 12's) asks the Kubernetes-only profile to build the checkout:
// Podman's build API is Buildah, not BuildKit, so occ refuses before anything is created, naming
// Podman and its version, the here-document Buildah stops at, and both ways on (images selected
// by digest, or Docker); a checkout without here-documents is refused too, naming its BuildKit
// secret mount, since occ's build path needs BuildKit whatever the Dockerfile holds.
func TestCheckBuilderRefusesPodman(t *testing.T) {
	root, runtime := fixtureDockerfiles(t)
	podman := engine.Identity{Version: "4.3.1", APIVersion: "1.41", Kind: engine.Podman}
	err := CheckBuilder(podman, []*Dockerfile{root, runtime})
	var be *BuilderError
	if !errors.As(err, &be) {
		t.Fatalf("Podman: %v", err)
	}
	for _, want := range []string{"Podman 4.3.1 cannot build", "runs Buildah", "the here-document at deploy/runtime/Dockerfile:61 (RUN node --input-type=module <<'NODE')",
		"nothing was created", EnvControllerImage + " and " + EnvRuntimeImage, "--engine docker"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "Docker Engine 4.3.1") {
		t.Errorf("Podman is named as a Docker Engine:\n%v", err)
	}
	err = CheckBuilder(podman, []*Dockerfile{root})
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "the RUN --mount at Dockerfile:") {
		t.Errorf("the root Dockerfile alone on Podman: %v", err)
	}
	// Docker Engine 28 still builds the same checkout.
	if err := CheckBuilder(engine.Identity{Version: "28.5.2", APIVersion: "1.51"}, []*Dockerfile{root, runtime}); err != nil {
		t.Errorf("Docker 28: %v", err)
	}
}

// fixtureDockerfiles parses the fixture checkout's two Dockerfiles: the root one (controller)
// and the Agent runtime's.
func fixtureDockerfiles(t *testing.T) (root, runtime *Dockerfile) {
	t.Helper()
	root, err := ParseDockerfile(fixtureRoot, ControllerDockerfile)
	if err != nil {
		t.Fatal(err)
	}
	runtime, err = ParseDockerfile(fixtureRoot, RuntimeDockerfile)
	if err != nil {
		t.Fatal(err)
	}
	return root, runtime
}

// The cost the Dockerfile analysis adds to every plan: both of the checkout's Dockerfiles parsed,
// their bases collected and the builder check applied.
func BenchmarkPlanFixtureBuilds(b *testing.B) {
	for b.Loop() {
		var builds []*PlannedBuild
		for _, req := range []BuildPlanRequest{
			{Role: "controller", ContextDir: fixtureRoot, Dockerfile: ControllerDockerfile, Target: ControllerTarget, Args: map[string]BuildArg{NodeBaseImageArg: {Value: pinnedNode, Source: "pin"}}},
			{Role: "runtime", ContextDir: fixtureRoot, Dockerfile: RuntimeDockerfile},
		} {
			pb, err := PlanBuild(req)
			if err != nil {
				b.Fatal(err)
			}
			builds = append(builds, pb)
		}
		if _, err := CollectBases(builds); err != nil {
			b.Fatal(err)
		}
		if err := CheckBuilder(engine.Identity{Version: "28.5.2", APIVersion: "1.51"}, []*Dockerfile{builds[0].File, builds[1].File}); err != nil {
			b.Fatal(err)
		}
	}
}
