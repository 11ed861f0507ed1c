package profile

import (
	"io"
	"net/http"

	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
)

// Deps are the parts of a profile's run that tests replace; the product never sets them, so
// the zero value of each is the real thing. The flow holds one Deps (its test seams) and hands
// it to the profile as it is.
type Deps struct {
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
}
