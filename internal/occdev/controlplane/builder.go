package controlplane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// The engine's builder: occ builds through the Docker engine's own BuildKit, whose built-in
// Dockerfile frontend is the one vendored into that engine release. Docker Engine 23.0 (API
// 1.42) was the first release whose frontend reads here-documents, RUN --network and --link;
// Debian's and Ubuntu's docker.io 20.10 (API 1.41) stops at the first here-document with a
// parse error, after occ would already have created the state, pulled the bases and started
// the data services. The API version is what the check compares: it is fixed by the engine's
// source, while the version string of an engine built from source can be anything.
//
// RUN --mount needs BuildKit, which every engine since 18.09 serves through the API occ uses
// (the classic builder that `docker compose --build` falls back to without buildx refuses it).
var featureMinimum = map[Feature]apiVersion{
	FeatureHeredoc:    {1, 42},
	FeatureRunNetwork: {1, 42},
	FeatureCopyLink:   {1, 42},
	FeatureRunMount:   {1, 39},
}

// minimumEngine names the first Docker Engine release of each API version the check asks for.
var minimumEngine = map[apiVersion]string{{1, 42}: "23.0", {1, 39}: "18.09"}

type apiVersion struct{ major, minor int }

func (v apiVersion) less(o apiVersion) bool {
	return v.major < o.major || v.major == o.major && v.minor < o.minor
}

func (v apiVersion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

func parseAPIVersion(s string) (apiVersion, bool) {
	major, minor, ok := strings.Cut(strings.TrimPrefix(s, "v"), ".")
	if !ok {
		return apiVersion{}, false
	}
	a, err1 := strconv.Atoi(major)
	b, err2 := strconv.Atoi(minor)
	return apiVersion{a, b}, err1 == nil && err2 == nil
}

// buildah reports whether the engine builds with Buildah (Podman) rather than BuildKit.
func buildah(eng engine.Identity) bool { return eng.Kind.Registration().Builder == engine.Buildah }

// BuilderError is a checkout whose Dockerfiles the engine's builder cannot build. Nothing has
// been created when it is returned.
type BuilderError struct {
	// Engine is the engine that would build: its version and API version as it reported them,
	// and its kind, whose registration says which builder serves its image builds.
	Engine engine.Identity
	// Uses are the refused uses, each with its Dockerfile and line.
	Uses []string
	// Need is the first Docker Engine release that builds them all.
	Need string
}

// selectBoth is the way around any builder: images built elsewhere, selected by digest.
var selectBoth = fmt.Sprintf("or build the controller and Agent runtime images elsewhere and select both by digest with %s and %s", EnvControllerImage, EnvRuntimeImage)

func (e *BuilderError) Error() string {
	if buildah(e.Engine) {
		name := e.Engine.Kind.Name()
		return fmt.Sprintf("%s %s cannot build the checkout's Dockerfiles: occ builds them with the engine's BuildKit builder (a BuildKit session answers their optional secret mounts), and %s's Docker-compatible build API runs Buildah instead, which this %s release stops at %s; nothing was created. Build and push the controller and Agent runtime images elsewhere and select both by digest with %s and %s, or use --engine docker with Docker Engine 23.0 or later",
			name, e.Engine.Version, name, name, strings.Join(e.Uses, ", "), EnvControllerImage, EnvRuntimeImage)
	}
	return fmt.Sprintf("Docker Engine %s (API %s) cannot build the checkout's Dockerfiles: its built-in Dockerfile frontend does not read %s; nothing was created. Upgrade to Docker Engine %s or later (docker-ce, Docker Desktop; Debian's and Ubuntu's docker.io 20.10 is too old), %s",
		e.Engine.Version, e.Engine.APIVersion, strings.Join(e.Uses, ", "), e.Need, selectBoth)
}

// CheckSyntax refuses Dockerfiles with a `# syntax=` directive. It names a frontend image that
// the engine would pull and run by itself to parse the file: unpinned (a tag such as
// docker/dockerfile:1 moves), not recorded, and never removed by `down`. Every OCE Dockerfile
// builds with the engine's built-in frontend.
func CheckSyntax(files []*Dockerfile) error {
	var found []string
	for _, f := range files {
		if f.Syntax != "" {
			found = append(found, fmt.Sprintf("%s:%d (# syntax=%s)", f.Path, f.SyntaxLine, f.Syntax))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("the checkout's Dockerfiles name a Dockerfile frontend image: %s; the engine would pull and run that frontend by itself, unpinned and unrecorded, so occ refuses it; remove the directive (the engine's built-in frontend builds the file on Docker Engine 23.0 or later), %s",
		strings.Join(found, ", "), selectBoth)
}

// CheckBuilder refuses, before anything is created, Dockerfiles that use a feature newer than
// the engine's built-in Dockerfile frontend, naming each use by file and line.
//
// On an engine that builds with Buildah (Podman) every build is refused: occ's build path is
// BuildKit's (a session for the secret mounts, BuildKit's progress stream), which Buildah does
// not serve. The error names the here-documents, which Podman 4's Buildah does not read, or
// else the first BuildKit-only use.
//
// eng is the engine that would build; its Kind, Version and APIVersion are read.
func CheckBuilder(eng engine.Identity, files []*Dockerfile) error {
	if buildah(eng) {
		return buildahBuilderError(eng, files)
	}
	have, ok := parseAPIVersion(eng.APIVersion)
	if !ok {
		return fmt.Errorf("the Docker engine reports API version %q (engine %s), which occ cannot compare: it cannot tell whether the engine's builder reads the checkout's Dockerfiles; use Docker Engine 23.0 or later", eng.APIVersion, eng.Version)
	}
	var uses []string
	need := apiVersion{}
	seen := map[string]bool{}
	for _, f := range files {
		for _, u := range f.Features {
			required := featureMinimum[u.Feature]
			if !have.less(required) {
				continue
			}
			key := fmt.Sprintf("%s:%d:%s", f.Path, u.Line, u.Feature)
			if seen[key] {
				continue
			}
			seen[key] = true
			uses = append(uses, fmt.Sprintf("the %s at %s:%d (%s)", u.Feature, f.Path, u.Line, u.Text))
			if need.less(required) {
				need = required
			}
		}
	}
	if len(uses) == 0 {
		return nil
	}
	name := minimumEngine[need]
	if name == "" {
		name = "with API " + need.String()
	}
	return &BuilderError{Engine: eng, Uses: uses, Need: name}
}

func buildahBuilderError(eng engine.Identity, files []*Dockerfile) error {
	var heredocs, others []string
	for _, f := range files {
		for _, u := range f.Features {
			use := fmt.Sprintf("the %s at %s:%d (%s)", u.Feature, f.Path, u.Line, u.Text)
			if u.Feature == FeatureHeredoc {
				heredocs = append(heredocs, use)
			} else {
				others = append(others, use)
			}
		}
	}
	uses := heredocs
	if len(uses) == 0 {
		uses = others
	}
	if len(uses) == 0 {
		uses = []string{"the BuildKit build occ starts"}
	}
	return &BuilderError{Engine: eng, Uses: uses, Need: "Docker Engine 23.0"}
}
