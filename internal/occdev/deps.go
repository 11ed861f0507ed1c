package occdev

import (
	"io"
	"net/http"

	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/profile"
)

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
	// Exec runs the reads in the Kubernetes-only profile's reader Pod; nil is the API server's
	// exec subresource (a test bed without a kubelet cannot serve it).
	Exec kubernetes.PodExec
	// APIClient is the HTTP client of every OCE API call of the Kubernetes-only profile (the
	// session, the key's verification, the Namespace poll); nil is occ's client with its
	// per-call timeouts.
	APIClient *http.Client
	// Random is the source of the generated credentials; nil is crypto/rand.
	Random io.Reader
	// BuildNetwork is the network of the RUN steps of the images occ builds itself (the Agent
	// runtime; the Kubernetes-only profile's controller); empty is the engine's default. A test
	// engine without a default bridge network needs "none". The Compose services' builds take
	// build.network from the Compose files.
	BuildNetwork string
	// Profiles are control-plane profiles a test adds to the registered ones, by
	// --control-plane name.
	Profiles map[string]profile.Profile
}
