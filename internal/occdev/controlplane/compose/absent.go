package compose

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// Resources are engine objects that belong (by label or by name) to a Compose project.
type Resources struct {
	Containers []string `json:"containers,omitempty"`
	Volumes    []string `json:"volumes,omitempty"`
	Networks   []string `json:"networks,omitempty"`
}

// Empty reports whether nothing was found.
func (r Resources) Empty() bool {
	return len(r.Containers) == 0 && len(r.Volumes) == 0 && len(r.Networks) == 0
}

func (r Resources) String() string {
	var parts []string
	for _, g := range []struct {
		kind  string
		names []string
	}{{"container", r.Containers}, {"volume", r.Volumes}, {"network", r.Networks}} {
		for _, n := range g.names {
			parts = append(parts, g.kind+" "+n)
		}
	}
	return strings.Join(parts, ", ")
}

// Names are the engine-side names a project's model uses; objects with these names belong to the
// project even without Compose's labels.
type Names struct {
	Volumes  []string
	Networks []string
	// Containers are the names Compose gives the services' first containers
	// (<project>-<service>-1); an unlabelled container of that name would make `up` fail half-way.
	Containers []string
}

// Names returns the model's volume and network names.
func (m *Model) Names() Names {
	return NamesOf(m.Project)
}

// FindResources lists everything of project on the engine: containers, volumes and networks
// labelled with the project (Compose's or podman-compose's label), and volumes and networks
// that carry one of names without a label.
func FindResources(ctx context.Context, eng engine.Engine, project string, names Names) (Resources, error) {
	var r Resources
	seen := map[string]bool{}
	add := func(list *[]string, kind, name string) {
		if name != "" && !seen[kind+"/"+name] {
			seen[kind+"/"+name] = true
			*list = append(*list, name)
		}
	}
	for _, label := range []string{LabelProject, LabelPodmanProject} {
		f := map[string]string{label: project}
		cs, err := eng.List(ctx, engine.Containers, f)
		if err != nil {
			return Resources{}, fmt.Errorf("list containers of Compose project %s: %w", project, err)
		}
		for _, c := range cs {
			name := c.Name
			if name == "" {
				name = c.ID[:min(12, len(c.ID))]
			}
			add(&r.Containers, "container", name)
		}
		vs, err := eng.List(ctx, engine.Volumes, f)
		if err != nil {
			return Resources{}, fmt.Errorf("list volumes of Compose project %s: %w", project, err)
		}
		for _, v := range vs {
			add(&r.Volumes, "volume", v.Name)
		}
		ns, err := eng.List(ctx, engine.Networks, f)
		if err != nil {
			return Resources{}, fmt.Errorf("list networks of Compose project %s: %w", project, err)
		}
		for _, n := range ns {
			add(&r.Networks, "network", n.Name)
		}
	}
	// Name filters match substrings, so each hit is compared exactly.
	for _, name := range names.Volumes {
		vs, err := eng.ListNamed(ctx, engine.Volumes, name)
		if err != nil {
			return Resources{}, fmt.Errorf("look for volume %s: %w", name, err)
		}
		for _, v := range vs {
			if v.Name == name {
				add(&r.Volumes, "volume", v.Name)
			}
		}
	}
	for _, name := range names.Containers {
		cs, err := eng.ListNamed(ctx, engine.Containers, name)
		if err != nil {
			return Resources{}, fmt.Errorf("look for container %s: %w", name, err)
		}
		for _, c := range cs {
			if c.Name == name {
				add(&r.Containers, "container", name)
			}
		}
	}
	for _, name := range names.Networks {
		ns, err := eng.ListNamed(ctx, engine.Networks, name)
		if err != nil {
			return Resources{}, fmt.Errorf("look for network %s: %w", name, err)
		}
		for _, n := range ns {
			if n.Name == name {
				add(&r.Networks, "network", n.Name)
			}
		}
	}
	slices.Sort(r.Containers)
	slices.Sort(r.Volumes)
	slices.Sort(r.Networks)
	return r, nil
}

// ExistsError reports project resources found before `up` created anything.
type ExistsError struct {
	Project   string
	Resources Resources
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("Compose project already has resources: %s (%s); a fresh database and bootstrap volume are required (bootstrap writes no key into an existing Installation). Remove them with occ dev down for the state that created them, or choose another project name with %s",
		e.Project, e.Resources, EnvProject)
}

// EnsureAbsent fails with *ExistsError when anything of the project already exists on the
// engine. It runs before the first mutation, so a refusal leaves nothing behind.
func (m *Model) EnsureAbsent(ctx context.Context, eng engine.Engine) error {
	r, err := FindResources(ctx, eng, m.Project.Name, m.Names())
	if err != nil {
		return err
	}
	if !r.Empty() {
		return &ExistsError{Project: m.Project.Name, Resources: r}
	}
	return nil
}

// LeftoverError reports project resources still present after `down`.
type LeftoverError struct {
	Project   string
	Resources Resources
}

func (e *LeftoverError) Error() string {
	return fmt.Sprintf("Compose project %s still has resources after down: %s", e.Project, e.Resources)
}

// VerifyGone fails with *LeftoverError while anything labelled with the project, or named as its
// model names its volumes and networks, remains on the engine.
func VerifyGone(ctx context.Context, eng engine.Engine, project string, names Names) error {
	r, err := FindResources(ctx, eng, project, names)
	if err != nil {
		return err
	}
	if !r.Empty() {
		return &LeftoverError{Project: project, Resources: r}
	}
	return nil
}
