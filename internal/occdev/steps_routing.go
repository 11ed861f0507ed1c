package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/progress"
)

// The local copies of the routing manifests, for offline use (the CLI binds each to its flag).
const (
	EnvCertManagerManifest  = platform.EnvCertManagerManifest
	EnvEnvoyGatewayManifest = platform.EnvEnvoyGatewayManifest
)

// resolveRouting decides the plan's routing from the pins and the local manifests.
func resolveRouting(p *Plan, o UpOptions) (err error) {
	p.Routing, err = platform.PlanRouting(platform.RoutingInput{Pins: p.pins,
		CertManagerManifest: o.CertManagerManifest, EnvoyGatewayManifest: o.EnvoyGatewayManifest})
	return err
}

// installsRouting reports whether the plan installs the routing controllers.
func (p *Plan) installsRouting() bool { return p.Routing.Installs() }

func describeRoutingFetch(p *Plan) Description {
	return p.Routing.DescribeFetch(p.pins.Routing, p.CacheDir)
}

func fetchRouting(ctx context.Context, r *run, rep progress.Reporter) (err error) {
	r.routing, err = r.plan.Routing.Fetch(ctx, r.plan.pins.Routing, r.fetcher(rep), rep.Note)
	return err
}

func describeRoutingApply(p *Plan) Description { return p.Routing.DescribeApply(p.routingControllers) }

// routingApplyStep names the routing manifests' apply.
const routingApplyStep = "Apply the routing controller manifests"

// routingImagesFirst is the routing apply s, run once every routing image is verified in the
// node by its lane beside it, so no controller Pod starts before its image is there.
func routingImagesFirst(s Step) Step {
	return imagesFirst(s, "applied once the controllers' images are verified in the node",
		func(r *run) []imageSlot { return routingImages(r.plan.pins) })
}

func applyRouting(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.ApplyRouting(ctx, r.conn, r.routing, r.plan.PullPolicy, r.plan.StartupTimeout)
}

// routingSummary is the summary's line about routing; route is the one the profile set up.
func (p *Plan) routingSummary(route string) string { return p.Routing.Summary(p.Namespace, route) }
