// Package cluster is layer 1 of `occ dev up`: the Kubernetes cluster everything else is
// installed into. A Provider makes a cluster available and says how to reach it; the flow never
// knows which provider it drives (kind's providers.Provider model). Each provider lives in its
// own package (existing/, k3d/) and sees only a Request: the names, paths, pins and recorder it
// needs, never the flow's internals.
//
// A provider that creates its cluster records it (state.Recorder) before creating it, so a
// failure half-way is still removed by rollback or `down` through the remover registered for
// the record's type. A provider that only uses a cluster records nothing and `down` never
// deletes that cluster.
//
// What only some providers can do is an optional interface the flow discovers by type
// assertion (Importer), never by the provider's name; what a control plane needs of the cluster
// is a provider-neutral field of the Request (Needs), which a provider meets or refuses.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Access is how occ reaches a cluster, exactly as recorded in the state: the kubeconfig file
// and context (absolute path, concrete name), the server, the kube-system UID that identifies
// the cluster, and for a cluster on a Docker network the container kubeconfig, the node's
// address on that network and the network's name. `down` and `status` use only the recorded
// Access, never the environment they run in.
type Access = state.Cluster

// The files of the state directory a provider that creates its cluster writes its kubeconfigs
// to (Request.KubeconfigFile and ContainerKubeconfigFile).
const (
	KubeconfigFile          = "kubeconfig"
	ContainerKubeconfigFile = "container-kubeconfig"
)

// Request is everything a provider may use. Describe and Check get a Request without Owner,
// Recorder and Progress (a dry run records nothing and reports no progress).
type Request struct {
	// Name is the cluster name occ chose for a cluster it creates (k3d); empty otherwise.
	Name string
	// Kubeconfig and Context select an existing cluster (--kubeconfig, --context); empty
	// means $KUBECONFIG or ~/.kube/config, and its current context.
	Kubeconfig string
	Context    string
	// KubeconfigFile and ContainerKubeconfigFile are where a provider that creates its cluster
	// writes its kubeconfigs, inside the private state directory (0600 and 0644). The user's
	// own kubeconfig is never written.
	KubeconfigFile          string
	ContainerKubeconfigFile string
	// Engine is the container engine's endpoint recorded in the state, which a provider that
	// runs its cluster in containers must use (and `down` will use again); zero for a provider
	// that needs no engine.
	Engine locate.Endpoint
	// EngineKind is the kind of the engine at Engine as the state records it (docker or
	// podman); empty means Docker.
	EngineKind engine.Kind
	// Pins are the resolved pins (the k3s node image).
	Pins *pins.Set
	// Owner is the state's ownership label value, for the labels on what the provider creates.
	Owner string
	// Recorder receives what the provider creates, before it is created.
	Recorder state.Recorder
	// Log receives notes that are not progress lines.
	Log io.Writer
	// Progress reports intermediate states on the step's own line (node start, image pulls).
	Progress progress.Reporter
	// Needs are what the control plane needs of the cluster.
	Needs
	// Settings are the provider's own settings (k3d.Settings for k3d), a value the plan decides;
	// nil for a provider that has none.
	Settings any
	// Ready, when set, may be called by a provider that creates its cluster as soon as the
	// cluster's API answers, with the Access Ensure will return, while Ensure still finishes the
	// cluster (k3d's records of the host in CoreDNS, the node's DNS check): the steps that need
	// only the API start there. An error from Ready fails Ensure, which then removes what it
	// made. A provider that never calls it is correct too; the flow connects after Ensure then.
	Ready func(context.Context, Access) error
}

// Needs are what a control plane needs of the cluster, in words every provider understands. A
// provider that cannot meet one refuses it in Check, so the dry run and the preflight report it.
type Needs struct {
	// Network is an existing container network the cluster's node joins (the Compose profile's
	// <project>_development), so containers on it reach the node by name; empty: none.
	Network string
	// Publish are NodePorts of the cluster's node published on the host's 127.0.0.1 (the
	// Kubernetes-only profile's API proxy).
	Publish []Port
	// HostPorts are host ports the control plane publishes itself, later in the run (the Compose
	// project's API and PostgreSQL ports).
	HostPorts []int
}

// TakenPorts are the host ports a provider that chooses one of its own (k3d's API port) must not
// take: the control plane's HostPorts and the Publish host ports. Each was free when the plan
// chose it but is bound only later, so a port free now may still be one of them.
func (n Needs) TakenPorts() []int {
	taken := slices.Clone(n.HostPorts)
	for _, p := range n.Publish {
		taken = append(taken, p.HostPort)
	}
	return taken
}

// Port publishes NodePort of the cluster's node at 127.0.0.1:HostPort.
type Port struct {
	HostPort int
	NodePort int
}

// Description says what a provider would create or use, for --dry-run.
type Description struct {
	// Description is what Ensure would create, as typed items (step.Describe; no Creates for a
	// provider that creates nothing), and its Note what it would use or check without creating
	// it.
	step.Description
	// Preflight says what Preflight checks of the cluster or its engine ("the kubeconfig, its
	// context and the cluster answer").
	Preflight string
}

// Provider supplies the cluster `up` installs into.
type Provider interface {
	// Name is the --cluster-provider value.
	Name() string
	// Describe lists what Ensure would create or use. It performs no I/O.
	Describe(req Request) Description
	// Check validates the request against local facts only (flags, names, the kubeconfig
	// file), without contacting anything; the dry run reports its error.
	Check(req Request) error
	// Preflight makes the cheap live checks (the cluster or the container engine answers)
	// that must pass before any slow work. It creates nothing.
	Preflight(ctx context.Context, req Request) error
	// Ensure creates or adopts the cluster and says how to reach it. A provider that creates
	// a cluster records it through req.Recorder before creating it, and adopts an existing one
	// only when its recorded identity matches exactly.
	Ensure(ctx context.Context, req Request) (Access, error)
	// NodeAddress is the host name or address at which a control plane outside the cluster
	// (the Compose profile) reaches a NodePort of the cluster.
	NodeAddress(ctx context.Context, access Access) (string, error)
	// Close releases what Preflight, Ensure or an importer opened (an engine connection, a
	// log file); the run closes its provider when it ends.
	Close() error
}

// Keeper is a provider that creates its cluster and records it: RecordType is the type of that
// record, whose inspection `occ dev status` reports as the cluster's state. A provider that
// only uses a cluster is no Keeper, and status says nothing of the cluster's existence.
type Keeper interface {
	RecordType() state.Type
}

// Importer is a provider whose cluster runs only images occ imports into its node (pull policy
// Never), instead of pulling them by digest itself. The flow imports and verifies the pinned
// images through it; a provider without it gets no import steps.
type Importer interface {
	// ImageImporter returns the importer of the cluster access names, reached through the
	// request's engine.
	ImageImporter(ctx context.Context, req Request, access Access) (images.Importer, error)
}

// EarlyImporter is an Importer whose node takes images while Ensure is still making the cluster:
// once its node exists and the node's containerd answers, which is seconds before the cluster's
// API does. The image lanes beside the cluster's creation import through it as soon as their
// pulls are done.
type EarlyImporter interface {
	Importer
	// NodeImporter waits until the node of the Ensure running beside it with the same request
	// takes images, and returns its importer. It creates nothing; it fails when that Ensure
	// ends without a node.
	NodeImporter(ctx context.Context, req Request) (images.Importer, error)
}

// ErrNoImport is the answer for a provider that is not an Importer.
var ErrNoImport = errors.New("its cluster pulls the pinned images by digest, occ imports none into it")

// ImporterOf returns the image importer of provider p for the cluster access names, or an
// error wrapping ErrNoImport.
func ImporterOf(ctx context.Context, p Provider, req Request, access Access) (images.Importer, error) {
	imp, ok := p.(Importer)
	if !ok {
		return nil, fmt.Errorf("import images into the cluster of the %s provider: %w", p.Name(), ErrNoImport)
	}
	return imp.ImageImporter(ctx, req, access)
}

// KeptError is a failed Ensure that left a recorded cluster `down` must check again: the
// creation failed by itself (it was not cancelled), and a half-made cluster is never assumed
// gone, because the provider's own cleanup ran under the conditions that made it fail. The
// rollback keeps Record and the state directory. It reads as its cause.
type KeptError struct {
	Record state.Object
	Err    error
}

func (e *KeptError) Error() string { return e.Err.Error() }
func (e *KeptError) Unwrap() error { return e.Err }

// Kept is the record a failed Ensure left for `down`, if err says it left one.
func Kept(err error) (state.Object, bool) {
	var k *KeptError
	if errors.As(err, &k) {
		return k.Record, true
	}
	return state.Object{}, false
}
