package emulator

import (
	"crypto/tls"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/contract"
)

// Options configure an emulator. The zero value serves plaintext gRPC on a random loopback port
// with sandboxes in memory, no authentication and the gateway's real admission limit.
type Options struct {
	// Listen is the loopback address to serve on (default "127.0.0.1:0"). Non-loopback
	// addresses are refused: the emulator trusts every caller.
	Listen string

	// Kube, when set, backs every sandbox by a Harness Pod in the Namespace named like its
	// Workspace (OpenShell's operator workspace mode). The Namespace must exist.
	Kube kubernetes.Interface

	// AdmissionLimit is the number of durable request_id admissions one caller may hold
	// (default 1000, the gateway's limit). Tests lower it to reach the limit quickly.
	AdmissionLimit int

	// Clock returns the current time (default time.Now). The 24 h replay window and every
	// timestamp the emulator writes use it; see FakeClock.
	Clock func() time.Time

	// Token, when set, is the bearer token every call except Health must present as
	// "authorization: Bearer <token>"; other calls fail UNAUTHENTICATED.
	Token string

	// TLS, when set, serves gRPC over TLS with this configuration (certificates, and client
	// certificate checks if the caller configures them).
	TLS *tls.Config

	// Version is what Health reports (default DefaultVersion).
	Version string

	// ServiceDomain is the base domain of service URLs (default "openshell.localhost").
	ServiceDomain string

	// DefaultImage is the Harness image used when a template names none.
	DefaultImage string

	// DefaultRuntimeClassName is the gateway-wide RuntimeClass used when neither the template
	// nor driver_config names one.
	DefaultRuntimeClassName string

	// ServiceAccountName is the gateway-wide sandbox ServiceAccount put on every Harness Pod
	// (empty leaves the Pod's default).
	ServiceAccountName string

	// ReplayServiceURLs makes a replayed CreateSandbox carry service_urls. Unconfirmed: the
	// upstream replay path (OpenShell's mutation_replay.rs) returns only the sandbox, so the
	// default (false) leaves the map empty on replay, and clients must cope.
	ReplayServiceURLs bool

	// Faults are injected at Start, before the first call can arrive; see Fault and Inject.
	Faults []Fault

	// NoReplayKeyMaterial emulates a gateway without readable JWT or TLS key material: protected
	// methods refuse any request_id with REQUEST_REPLAY_UNAVAILABLE before doing work.
	NoReplayKeyMaterial bool
}

// DefaultVersion is the gateway version Health reports unless Options.Version says otherwise:
// the pinned OpenShell release the emulator stands in for, marked as emulated.
const DefaultVersion = contract.PinnedOpenShellVersion + "-emulator"

// DefaultAdmissionLimit is the gateway's per-caller limit of durable request admissions.
const DefaultAdmissionLimit = 1000

// DefaultImage is the Harness image used when neither the template nor Options name one.
const DefaultImage = "ghcr.io/nvidia/openshell/sandbox:emulated"

func (o Options) withDefaults() Options {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.AdmissionLimit <= 0 {
		o.AdmissionLimit = DefaultAdmissionLimit
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.ServiceDomain == "" {
		o.ServiceDomain = "openshell.localhost"
	}
	if o.DefaultImage == "" {
		o.DefaultImage = DefaultImage
	}
	return o
}

// FakeClock is a settable clock for Options.Clock, safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock standing at t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
