package controlplane

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// What the Kubernetes-only profile builds from the checkout when no images are selected: the
// controller from the root Dockerfile's runtime target with the Node base as NODE_BASE_IMAGE,
// and the Agent runtime from deploy/runtime/Dockerfile with its own defaults.
const (
	ControllerDockerfile = "Dockerfile"
	ControllerTarget     = "runtime"
	RuntimeDockerfile    = "deploy/runtime/Dockerfile"
	NodeBaseImageArg     = "NODE_BASE_IMAGE"

	// DefaultControllerTag and DefaultRuntimeTag are the reference launcher's tags.
	DefaultControllerTag = "openclaw-enterprise-controller:kubernetes-quickstart"
	DefaultRuntimeTag    = "openclaw-enterprise-runtime:kubernetes-quickstart"
)

// BuildImage builds req through the engine's Build verb (its BuildKit builder) and returns the
// tagged image.
func BuildImage(ctx context.Context, eng engine.Engine, req engine.BuildRequest) (LocalImage, error) {
	res, err := eng.Build(ctx, req)
	if err != nil {
		return LocalImage{}, err
	}
	return LocalImage{Reference: req.Tag, ID: res.ID}, nil
}

// ImageTags name the images built from the checkout.
type ImageTags struct {
	Controller string
	Runtime    string
}

// DefaultImageTags are the reference launcher's tags.
func DefaultImageTags() ImageTags {
	return ImageTags{Controller: DefaultControllerTag, Runtime: DefaultRuntimeTag}
}

// ImageOptions say how the control-plane images are obtained.
type ImageOptions struct {
	// Selection is the developer's selection; empty builds both images.
	Selection ImageSelection
	// Checkout is the absolute path of the OCE checkout (the build context).
	Checkout string
	// Commit is the checkout's 40-hex commit, which selected images' revision labels must match.
	Commit string
	// ControllerArgs and RuntimeArgs are the build arguments of the two builds: the controller
	// needs NODE_BASE_IMAGE (the root Dockerfile gives it no default); each base comes in by the
	// digest occ pulled (PlannedBuild.WithResolved).
	ControllerArgs map[string]string
	RuntimeArgs    map[string]string
	// Tags name built images; zero values take DefaultImageTags.
	Tags ImageTags
	// Progress receives the build output; nil discards it.
	Progress func(line string)
	// NetworkMode is passed to the builds (see engine.BuildRequest).
	NetworkMode string
}

// BuildRequests are the controller and Agent runtime builds the profiles make from
// opts (the one definition of them, which `occ dev reload` records and repeats).
func BuildRequests(opts ImageOptions) (controller, runtime engine.BuildRequest) {
	tags := opts.Tags
	defaults := DefaultImageTags()
	if tags.Controller == "" {
		tags.Controller = defaults.Controller
	}
	if tags.Runtime == "" {
		tags.Runtime = defaults.Runtime
	}
	controller = engine.BuildRequest{
		ContextDir: opts.Checkout, Dockerfile: ControllerDockerfile, Target: ControllerTarget,
		Args: opts.ControllerArgs, Tag: tags.Controller,
		Progress: opts.Progress, NetworkMode: opts.NetworkMode,
	}
	runtime = engine.BuildRequest{
		ContextDir: opts.Checkout, Dockerfile: RuntimeDockerfile, Tag: tags.Runtime, Args: opts.RuntimeArgs,
		Progress: opts.Progress, NetworkMode: opts.NetworkMode,
	}
	return controller, runtime
}

// CheckBuilds refuses build options the controller build cannot start from: it needs its Node
// base image.
func (o ImageOptions) CheckBuilds() error {
	if o.ControllerArgs[NodeBaseImageArg] == "" {
		return fmt.Errorf("no Node base image for the controller build: pass the pinned one or %s", EnvNodeBaseImage)
	}
	return nil
}
