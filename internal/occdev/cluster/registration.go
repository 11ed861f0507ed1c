package cluster

import (
	"maps"
	"slices"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
)

// Registration is one cluster provider as the flow knows it: its --cluster-provider value, the
// settings it declares of its own and those of them the user set, the rule that turns the
// cluster settings into its plan, and the live provider a run opens. Each provider's package
// exports one, and the flow's table lists them; the flow never names a provider otherwise
// (kind's providers.Provider, chosen by one option).
type Registration struct {
	// Name is the --cluster-provider value.
	Name string
	// Settings returns a fresh options value of the provider's own type, as a pointer, and the
	// settings it declares of its own (option.Setting), each bound to one of that value's
	// fields; nil for a provider with none. Whoever fills the fields (the CLI, from its flags and
	// variables) fills what Given and Resolve read back from Options.Settings by Name.
	Settings func() (options any, settings []option.Setting)
	// Given lists the settings of this provider the user set, in the order it checks them; every
	// other provider refuses them (nil: it has none).
	Given func(Options) []Setting
	// Resolve checks the provider's own settings, refuses foreign (the settings of the other
	// providers the user set, in table order) and decides its plan. It contacts nothing but the
	// engine, through Options.Engine, and only when its cluster runs in one.
	Resolve func(o Options, foreign []Setting) (Plan, error)
	// Open makes the live provider of a run (or of a dry run's description); the caller closes it.
	Open func() Provider
}

// Setting is one provider setting the user set, named for another provider's refusal.
type Setting struct {
	// Option names the flag and variable as messages show them ("--api-port (OCC_…)").
	Option string
	Value  string
	// Purpose says what the setting does, in words that complete a sentence ("configures the
	// k3d cluster occ creates").
	Purpose string
	// Provider is the --cluster-provider value the setting belongs to.
	Provider string
}

// Options are the cluster settings of one `up` as the user gave them: every provider's, because
// each provider refuses the settings of the others (a setting that would silently do nothing is
// a mistake the user wants to hear about). The CLI binds them to flags as part of the flow's
// options.
type Options struct {
	// Kubeconfig and Context select the existing cluster (--kubeconfig, --context).
	Kubeconfig string
	Context    string
	// Settings are each provider's own settings by its --cluster-provider name, the options
	// value its Registration.Settings made (or one of that type; nil: every default). A provider
	// reads only its own (option.Own).
	Settings map[string]any
	// Timeout is the startup timeout, which also bounds a cluster's creation.
	Timeout time.Duration
	// ExemptRuntimeClasses are the RuntimeClasses a cluster the provider creates exempts from
	// PodSecurity admission (the sandboxes').
	ExemptRuntimeClasses []string
	// Engine locates and identifies the container engine with the flow's one locator, which
	// records what it found in the plan. A provider whose cluster runs in the engine calls it.
	Engine func() (Engine, error)
}

// Engine is the container engine as it identified itself while planning; both are empty when no
// engine answered (the preflight reports it).
type Engine struct {
	// Kind is docker or podman.
	Kind engine.Kind
	// Platform is the product the engine said it is part of ("Docker Desktop 4.37.1 (178610)").
	Platform string
}

// Plan is a provider's part of the plan of one `up`: values only, decided before anything runs.
type Plan struct {
	// Name names the cluster the provider creates; empty for one it does not create.
	Name string
	// APIPort is the Kubernetes API's port on 127.0.0.1 of the cluster it creates; 0 lets it
	// choose a free one at creation.
	APIPort int
	// Settings are the provider's own settings, opaque to the flow, handed back in every
	// Request (Request.Settings).
	Settings any
}

// Foreign lists the settings the user set of every provider in table but the one named, in the
// order of the providers' names and then in each provider's own order.
func Foreign(table map[string]Registration, name string, o Options) []Setting {
	var out []Setting
	for _, n := range slices.Sorted(maps.Keys(table)) {
		if r := table[n]; n != name && r.Given != nil {
			out = append(out, r.Given(o)...)
		}
	}
	return out
}
