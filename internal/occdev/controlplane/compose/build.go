package compose

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/step"
)

// Build is one image occ builds from the model, before Compose runs, for the services that
// share its build (the checkout's anchor makes migrate, bootstrap, controller and the worker
// share one).
//
// occ builds through the engine's BuildKit API (controlplane.BuildImage), not `compose up
// --build`: without the buildx plugin (Debian's docker.io, a bare dockerd) Compose falls back to
// the classic builder, which refuses the `RUN --mount=type=secret` of OCE's root Dockerfile,
// while the engine's own BuildKit builds it everywhere Docker 18.09+ runs. Compose then starts
// the services from the built tag with pull_policy never.
type Build struct {
	// Role names the image in the plan and the state: its target, or its first service when it
	// has none or two builds share a target (so the roles of a model's builds differ).
	Role string `json:"role"`
	// Tag names the result: <project>-<role>.
	Tag string `json:"tag"`
	// Services run the image, in start order.
	Services []string `json:"services"`
	// Context is the absolute build context; Dockerfile its slash-separated path inside it.
	Context    string `json:"context"`
	Dockerfile string `json:"dockerfile"`
	Target     string `json:"target,omitempty"`
	// Args are the build arguments, interpolated.
	Args map[string]string `json:"args,omitempty"`
	// Network is build.network (the network of RUN steps); empty is the engine's default.
	Network string `json:"network,omitempty"`
}

// UseBuiltImages plans one Build per distinct build of the started services and runs each of
// those services from its Build's tag instead of building it (build removed, image set, pull
// policy never), so the snapshot records exactly the images occ built. Call it before
// WriteSnapshot, then build each Build (controlplane.BuildImage) before starting anything. Build
// keys the engine's BuildKit API cannot honour as Compose would are refused, naming the service
// and the key.
func (m *Model) UseBuiltImages() ([]Build, error) {
	var (
		builds     []Build
		specs      []buildSpec
		violations []Violation
	)
	for _, name := range m.StartedServices() {
		svc, ok := m.Project.Services[name]
		if !ok || svc.Build == nil {
			continue
		}
		spec, vs := specOf(name, *svc.Build)
		if len(vs) > 0 {
			violations = append(violations, vs...)
			continue
		}
		i := slices.IndexFunc(specs, func(s buildSpec) bool { return reflect.DeepEqual(s, spec) })
		if i < 0 {
			specs = append(specs, spec)
			builds = append(builds, Build{Services: []string{name}, Context: spec.Context, Dockerfile: spec.Dockerfile, Target: spec.Target, Args: spec.Args, Network: spec.Network})
			continue
		}
		builds[i].Services = append(builds[i].Services, name)
	}
	if len(violations) > 0 {
		return nil, &ProjectError{Violations: violations}
	}
	targets := map[string]int{}
	for _, b := range builds {
		targets[b.Target]++
	}
	for i := range builds {
		suffix := builds[i].Target
		if suffix == "" || targets[suffix] > 1 {
			suffix = builds[i].Services[0]
		}
		builds[i].Role = suffix
		builds[i].Tag = m.Project.Name + "-" + suffix
		for _, name := range builds[i].Services {
			svc := m.Project.Services[name]
			svc.Build = nil
			svc.Image = builds[i].Tag
			svc.PullPolicy = types.PullPolicyNever
			m.Project.Services[name] = svc
		}
	}
	return builds, nil
}

// buildSpec is what makes two builds the same image.
type buildSpec struct {
	Context, Dockerfile, Target, Network string
	Args                                 map[string]string
}

// supportedBuildKeys are the build keys occ passes to BuildKit; the rest are refused rather
// than silently dropped (a secret, an extra context or a platform would change what is built).
var supportedBuildKeys = []string{"context", "dockerfile", "target", "args", "network"}

func specOf(service string, b types.BuildConfig) (buildSpec, []Violation) {
	var out []Violation
	refuse := func(key, value string) {
		out = append(out, Violation{Service: service, Key: "build." + key, Value: value,
			Rule: "occ builds the development images through the Docker engine's BuildKit API, which takes only build." + strings.Join(supportedBuildKeys, ", build."),
			Fix:  "remove build." + key + " from the service, or select prebuilt images with " + controlplane.EnvControllerImage + " and " + controlplane.EnvRuntimeImage})
	}
	unsupported := []struct {
		key string
		set bool
		val string
	}{
		{"dockerfile_inline", b.DockerfileInline != "", "(inline)"},
		{"entitlements", len(b.Entitlements) > 0, strings.Join(b.Entitlements, ",")},
		{"provenance", b.Provenance != "", b.Provenance},
		{"sbom", b.SBOM != "", b.SBOM},
		{"ssh", len(b.SSH) > 0, fmt.Sprint(len(b.SSH)) + " entries"},
		{"labels", len(b.Labels) > 0, fmt.Sprint(len(b.Labels)) + " labels"},
		{"cache_from", len(b.CacheFrom) > 0, strings.Join(b.CacheFrom, ",")},
		{"cache_to", len(b.CacheTo) > 0, strings.Join(b.CacheTo, ",")},
		{"no_cache", b.NoCache, "true"},
		{"no_cache_filter", len(b.NoCacheFilter) > 0, strings.Join(b.NoCacheFilter, ",")},
		{"additional_contexts", len(b.AdditionalContexts) > 0, fmt.Sprint(len(b.AdditionalContexts)) + " contexts"},
		{"pull", b.Pull, "true"},
		{"extra_hosts", len(b.ExtraHosts) > 0, fmt.Sprint(len(b.ExtraHosts)) + " hosts"},
		{"isolation", b.Isolation != "", b.Isolation},
		{"secrets", len(b.Secrets) > 0, fmt.Sprint(len(b.Secrets)) + " secrets"},
		{"shm_size", b.ShmSize != 0, fmt.Sprint(b.ShmSize)},
		{"tags", len(b.Tags) > 0, strings.Join(b.Tags, ",")},
		{"ulimits", len(b.Ulimits) > 0, fmt.Sprint(len(b.Ulimits)) + " limits"},
		{"platforms", len(b.Platforms) > 0, strings.Join(b.Platforms, ",")},
		{"privileged", b.Privileged, "true"},
	}
	for _, u := range unsupported {
		if u.set {
			refuse(u.key, u.val)
		}
	}
	if !filepath.IsAbs(b.Context) {
		out = append(out, Violation{Service: service, Key: "build.context", Value: b.Context,
			Rule: "the build context must be a local directory", Fix: "build from a directory (the checkout); remote contexts are not supported"})
	}
	dockerfile := b.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if filepath.IsAbs(dockerfile) {
		rel, err := filepath.Rel(b.Context, dockerfile)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			out = append(out, Violation{Service: service, Key: "build.dockerfile", Value: dockerfile,
				Rule: "the Dockerfile must be inside the build context " + b.Context, Fix: "move it into the context or change the context"})
		}
		dockerfile = rel
	}
	args := map[string]string{}
	for k, v := range b.Args {
		if v != nil {
			args[k] = *v
		}
	}
	if len(args) == 0 {
		args = nil
	}
	return buildSpec{Context: b.Context, Dockerfile: filepath.ToSlash(dockerfile), Target: b.Target, Network: b.Network, Args: args}, out
}

// Describe is the image b builds, for the dry run.
func (b Build) Describe() step.Image {
	s := fmt.Sprintf("built by the engine's BuildKit from %s (%s", b.Context, b.Dockerfile)
	if b.Target != "" {
		s += ", target " + b.Target
	}
	if len(b.Args) > 0 {
		keys := make([]string, 0, len(b.Args))
		for k := range b.Args {
			keys = append(keys, k+"="+b.Args[k])
		}
		sort.Strings(keys)
		s += ", " + strings.Join(keys, " ")
	}
	return step.Image{Reference: b.Tag, Where: step.InEngine, Note: s + ") for " + strings.Join(b.Services, ", ")}
}
