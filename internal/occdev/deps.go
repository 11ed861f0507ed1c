package occdev

import "github.com/openclaw/occ/internal/occdev/profile"

// deps are the parts of `up` and `reload` that tests replace. The product never sets them: the
// zero value of each is the real thing, so no setting a user can give reaches them. Tests set
// them through Seams (export_test.go).
type deps struct {
	// AfterStep is called after each successful step (from the goroutine of the step's lane);
	// an error fails the run there.
	AfterStep func(name string) error
	// Sequential runs the lanes of every group one after another instead of side by side, so a
	// benchmark can measure what the overlap saves.
	Sequential bool
	// Deps are the seams the profiles share (the reader Pod's exec, the OCE API client, the
	// credentials' random source, the build network), handed to a profile as they are.
	profile.Deps
	// Profiles are control-plane profiles a test adds to the registered ones, by
	// --control-plane name.
	Profiles map[string]profile.Profile
}

// Seams returns the test seams of o for a test to set (AfterStep, Sequential, Exec, APIClient,
// Random, BuildNetwork, Profiles). It is not in export_test.go because the CLI's tests register a
// profile of their own through it, to drive that profile's settings through `occ dev up`'s
// flags and variables; the product never calls it.
func (o *UpOptions) Seams() *deps { return &o.deps }
