package occdev

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// The local copies of the routing manifests, for offline use; each must still have its pinned
// sha256.
const (
	EnvCertManagerManifest  = "OCC_DEVELOPMENT_CERT_MANAGER_MANIFEST"
	EnvEnvoyGatewayManifest = "OCC_DEVELOPMENT_ENVOY_GATEWAY_MANIFEST"
	optCertManagerManifest  = "--cert-manager-manifest (" + EnvCertManagerManifest + ")"
	optEnvoyGatewayManifest = "--envoy-gateway-manifest (" + EnvEnvoyGatewayManifest + ")"
)

// RoutingPlan says whether `up` installs the routing controllers, and if not why.
type RoutingPlan struct {
	// Controllers are the controllers installed ("cert-manager v1.18.4"); empty when none are.
	Controllers []string `json:"controllers,omitempty"`
	// Skipped says why none are installed and what that means; empty when they are.
	Skipped string `json:"skipped,omitempty"`
	// Manifests are the selected local copies of the manifests, by controller key.
	Manifests map[string]string `json:"manifests,omitempty"`
	// Route is the private Agent Gateway route the control plane sets up itself beside the
	// cluster (the Compose profile with a checkout); empty when the platform's route stands.
	Route string `json:"route,omitempty"`
}

// routingSkippedEffect is what an environment without routing controllers cannot do.
const routingSkippedEffect = "dedicated Agent deployments fail with DEPENDENCY_UNAVAILABLE"

// resolveRouting decides the plan's routing from the pins and the local manifests.
func resolveRouting(p *Plan, o UpOptions) error {
	r := p.pins.Routing
	switch {
	case r == nil:
		p.Routing.Skipped = "the pins (" + p.pins.Source + ") have no routing section; " + routingSkippedEffect
	case !r.Resolved():
		p.Routing.Skipped = "the pins (" + p.pins.Source + ") record no digests for the routing controllers' images; " + routingSkippedEffect + " (occ dev pins show explains)"
	default:
		for _, c := range r.Controllers() {
			p.Routing.Controllers = append(p.Routing.Controllers, c.Name+" "+c.Version)
		}
	}
	for _, sel := range []struct{ opt, key, path string }{
		{optCertManagerManifest, pins.KeyRoutingCertManager, o.CertManagerManifest},
		{optEnvoyGatewayManifest, pins.KeyRoutingEnvoyGateway, o.EnvoyGatewayManifest},
	} {
		if sel.path == "" {
			continue
		}
		if p.Routing.Skipped != "" {
			return &OptionError{Option: sel.opt, Value: sel.path, Rule: "selects a routing manifest, but " + p.Routing.Skipped,
				Fix: "use a pin file whose routing section lists the images (--pin-file), or drop the selection"}
		}
		abs, err := filepath.Abs(sel.path)
		if err == nil {
			err = option.RegularFile(abs)
		}
		if err != nil {
			return &OptionError{Option: sel.opt, Value: sel.path, Rule: err.Error(), Fix: "name a local copy of the pinned release manifest, or leave it unset to download it"}
		}
		if p.Routing.Manifests == nil {
			p.Routing.Manifests = map[string]string{}
		}
		p.Routing.Manifests[sel.key] = abs
	}
	return nil
}

// installsRouting reports whether the plan installs the routing controllers.
func (p *Plan) installsRouting() bool { return len(p.Routing.Controllers) > 0 }

func describeRoutingFetch(p *Plan) Description {
	var parts []string
	for _, c := range p.pins.Routing.Controllers() {
		if path := p.Routing.Manifests[c.Key]; path != "" {
			parts = append(parts, c.Name+" "+c.Version+" from "+path)
		} else {
			parts = append(parts, c.Name+" "+c.Version+" from "+contract.RedactURL(c.Manifest.URL))
		}
	}
	return creates("the pinned routing controller manifests in " + p.CacheDir + " unless cached (" + strings.Join(parts, "; ") + "), each verified against its sha256; every image they name must be pinned and is run by its digest")
}

// fetchRouting fetches (or takes from the cache or the selected file) each routing manifest,
// verifies it against its pin, and admits its images.
func fetchRouting(ctx context.Context, r *run, rep progress.Reporter) error {
	r.routing = r.routing[:0]
	for _, c := range r.plan.pins.Routing.Controllers() {
		var v *artifacts.Verified
		var err error
		source := contract.RedactURL(c.Manifest.URL)
		if path := r.plan.Routing.Manifests[c.Key]; path != "" {
			source = path
			v, err = artifacts.OpenVerified(path, c.Manifest.SHA256)
		} else {
			v, err = r.fetcher(rep).Fetch(ctx, c.Manifest)
		}
		if err != nil {
			flag, env := optCertManagerManifest, EnvCertManagerManifest
			if c.Key == pins.KeyRoutingEnvoyGateway {
				flag, env = optEnvoyGatewayManifest, EnvEnvoyGatewayManifest
			}
			return fmt.Errorf("%s manifest %s: %w%s", c.Name, source, err, offlineFix(err, strings.Fields(flag)[0], env))
		}
		data, err := artifacts.ReadManifest(v)
		v.Close()
		if err != nil {
			return fmt.Errorf("%s manifest %s: %w", c.Name, source, err)
		}
		admitted, err := platform.AdmitRoutingManifest(c, data, source)
		if err != nil {
			return err
		}
		for _, l := range admitted.Left {
			rep.Note(c.Name + ": not applied: " + l)
		}
		r.routing = append(r.routing, admitted)
	}
	return nil
}

func describeRoutingApply(p *Plan) Description {
	d := step.Objects(platform.DescribeGatewayClass()...)
	d.Creates = append([]string{"the objects of the " + strings.Join(p.Routing.Controllers, " and ") + " manifests (CRDs, namespaces " + platform.RoutingCertManagerNS + " and " + platform.RoutingEnvoyNamespace + ", controllers), every image by its pinned digest, once the cluster serves the Gateway API"}, d.Creates...)
	return d
}

// routingApplyStep names the routing manifests' apply.
const routingApplyStep = "Apply the routing controller manifests"

// routingImagesFirst is the routing apply s, run once every routing image is verified in the
// node by its lane beside it, so no controller Pod starts before its image is there.
func routingImagesFirst(s Step) Step {
	return imagesFirst(s, "applied once the controllers' images are verified in the node",
		func(r *run) []imageSlot { return routingImages(r.plan.pins) })
}

// applyRouting applies the admitted routing manifests, their containers with the plan's pull
// policy (Never where occ imported the images into the node).
func applyRouting(ctx context.Context, r *run, _ progress.Reporter) error {
	for _, c := range r.routing {
		if err := c.SetPullPolicy(r.plan.PullPolicy); err != nil {
			return fmt.Errorf("%s %s manifest: %w", c.Name, c.Version, err)
		}
	}
	return platform.ApplyRouting(ctx, r.conn, r.routing, r.plan.StartupTimeout)
}

// routingWorkloads are the routing controllers' Deployments, which the platform's wait covers.
func (r *run) routingWorkloads() []platform.Workload {
	var ws []platform.Workload
	for _, c := range r.routing {
		ws = append(ws, c.Workloads()...)
	}
	return ws
}

// routingInstallation is the Installation's routing when the controllers are installed: the
// Gateway OCE creates for dedicated Agent Gateways in the platform namespace, Envoy's namespace,
// the route's hostname, and the node's Pod CIDRs as the proxies Agent Gateways trust (the
// Envoy proxy Pods run there).
func (r *run) routingInstallation(ctx context.Context) (*platform.InstallationRouting, error) {
	if !r.plan.installsRouting() {
		return nil, nil
	}
	nodes, err := r.conn.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the cluster's nodes for the routing's trusted proxy ranges: %w", err)
	}
	cidrs, err := platform.NodePodCIDRs(nodes.Items)
	if err != nil {
		return nil, err
	}
	return &platform.InstallationRouting{
		GatewayName:       platform.RoutingGatewayName,
		GatewayNamespace:  r.plan.Namespace,
		EnvoyNamespace:    platform.RoutingEnvoyNamespace,
		Hostname:          platform.RoutingHostname(r.plan.Namespace),
		TrustedProxyCIDRs: cidrs,
	}, nil
}

// routingSummary is the summary's line about routing: the route the profile set up (route, as
// its summary names it) when it set up its own, else the platform's.
func (p *Plan) routingSummary(route string) string {
	if !p.installsRouting() {
		return "none: " + p.Routing.Skipped
	}
	if route == "" {
		route = platform.RoutingHostname(p.Namespace)
	}
	return strings.Join(p.Routing.Controllers, ", ") + " (route " + route + ")"
}
