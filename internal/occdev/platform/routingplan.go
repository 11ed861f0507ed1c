package platform

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// The local copies of the routing manifests, for offline use; each must still have its pinned
// sha256.
const (
	EnvCertManagerManifest  = "OCC_DEVELOPMENT_CERT_MANAGER_MANIFEST"
	EnvEnvoyGatewayManifest = "OCC_DEVELOPMENT_ENVOY_GATEWAY_MANIFEST"
)

// routingSettings name the local routing manifests' settings in messages, by controller key.
var routingSettings = map[string]option.Setting{
	pins.KeyRoutingCertManager:  {Flag: "cert-manager-manifest", Env: EnvCertManagerManifest},
	pins.KeyRoutingEnvoyGateway: {Flag: "envoy-gateway-manifest", Env: EnvEnvoyGatewayManifest},
}

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

// RoutingInput is what PlanRouting decides from: the pins, and the local copies of the
// manifests as given ("" for the pinned download), each checked by the rule of a local input
// file (option.RegularFile).
type RoutingInput struct {
	Pins                                      *pins.Set
	CertManagerManifest, EnvoyGatewayManifest string
}

// PlanRouting decides the routing from the pins and the local manifests: the controllers are
// installed when the pins record their images' digests, and a local manifest selected without
// them is a bad setting.
func PlanRouting(in RoutingInput) (RoutingPlan, error) {
	var p RoutingPlan
	switch r := in.Pins.Routing; {
	case r == nil:
		p.Skipped = "the pins (" + in.Pins.Source + ") have no routing section; " + routingSkippedEffect
	case !r.Resolved():
		p.Skipped = "the pins (" + in.Pins.Source + ") record no digests for the routing controllers' images; " + routingSkippedEffect + " (occ dev pins show explains)"
	default:
		for _, c := range r.Controllers() {
			p.Controllers = append(p.Controllers, c.Name+" "+c.Version)
		}
	}
	for _, sel := range []struct{ key, path string }{
		{pins.KeyRoutingCertManager, in.CertManagerManifest},
		{pins.KeyRoutingEnvoyGateway, in.EnvoyGatewayManifest},
	} {
		if sel.path == "" {
			continue
		}
		opt := routingSettings[sel.key].String()
		if p.Skipped != "" {
			return RoutingPlan{}, &option.Error{Option: opt, Value: sel.path, Rule: "selects a routing manifest, but " + p.Skipped,
				Fix: "use a pin file whose routing section lists the images (--pin-file), or drop the selection"}
		}
		abs, err := filepath.Abs(sel.path)
		if err == nil {
			err = option.RegularFile(abs)
		}
		if err != nil {
			return RoutingPlan{}, &option.Error{Option: opt, Value: sel.path, Rule: err.Error(), Fix: "name a local copy of the pinned release manifest, or leave it unset to download it"}
		}
		if p.Manifests == nil {
			p.Manifests = map[string]string{}
		}
		p.Manifests[sel.key] = abs
	}
	return p, nil
}

// Installs reports whether the plan installs the routing controllers.
func (p RoutingPlan) Installs() bool { return len(p.Controllers) > 0 }

// DescribeFetch is the dry run's account of Fetch of the pinned routing r, with the artifact
// cache cacheDir: the cache file of each manifest it downloads; a selected one is only read.
func (p RoutingPlan) DescribeFetch(r *pins.Routing, cacheDir string) step.Description {
	var items []step.Item
	var selected []string
	for _, c := range r.Controllers() {
		if path := p.Manifests[c.Key]; path != "" {
			selected = append(selected, c.Name+" "+c.Version+" from "+path)
			continue
		}
		f, err := artifacts.CacheFile(c.Manifest, cacheDir, "the pinned "+c.Name+" "+c.Version+" manifest from "+contract.RedactURL(c.Manifest.URL))
		if err != nil {
			return step.Note("nothing known of the artifact cache: " + err.Error())
		}
		items = append(items, f)
	}
	d := step.Describe(items...)
	d.Note = "each manifest verified against its sha256; every image they name must be pinned and is run by its digest"
	if len(selected) > 0 {
		d.Note = "reads the selected " + strings.Join(selected, "; ") + "; " + d.Note
	}
	return d
}

// Fetch fetches through f (or takes from the cache or the selected file) each manifest of the
// pinned routing r, verifies it against its pin, and admits its images; note tells what of a
// manifest is not applied.
func (p RoutingPlan) Fetch(ctx context.Context, r *pins.Routing, f *artifacts.Fetcher, note func(string)) ([]*RoutingController, error) {
	var out []*RoutingController
	for _, c := range r.Controllers() {
		var v *artifacts.Verified
		var err error
		source := contract.RedactURL(c.Manifest.URL)
		if path := p.Manifests[c.Key]; path != "" {
			source = path
			v, err = artifacts.OpenVerified(path, c.Manifest.SHA256)
		} else {
			v, err = f.Fetch(ctx, c.Manifest)
		}
		if err != nil {
			return nil, fmt.Errorf("%s manifest %s: %w%s", c.Name, source, err, f.OfflineFix(err, routingSettings[c.Key]))
		}
		admitted, err := admitVerified(c, v, source)
		if err != nil {
			return nil, err
		}
		for _, l := range admitted.Left {
			note(c.Name + ": not applied: " + l)
		}
		out = append(out, admitted)
	}
	return out, nil
}

// admitVerified reads the verified manifest v of the controller c (from source) and admits it
// (AdmitRoutingManifest); v is closed.
func admitVerified(c pins.NamedController, v *artifacts.Verified, source string) (*RoutingController, error) {
	data, err := artifacts.ReadManifest(v)
	v.Close()
	if err != nil {
		return nil, fmt.Errorf("%s manifest %s: %w", c.Name, source, err)
	}
	return AdmitRoutingManifest(c, data, source)
}

// Local is, for the dry run, what Fetch of the pinned routing r would return without a
// download: each manifest read from its selected file or from the verified copy already in the
// artifact cache cacheDir, checked against its pin and admitted as Fetch admits it. It is nil
// when the plan installs no controllers or any manifest is not local or not admitted (Fetch
// says why when it runs).
func (p RoutingPlan) Local(r *pins.Routing, cacheDir string) []*RoutingController {
	if !p.Installs() {
		return nil
	}
	var out []*RoutingController
	for _, c := range r.Controllers() {
		path := p.Manifests[c.Key]
		if path == "" {
			var err error
			if path, err = (&artifacts.Fetcher{CacheDir: cacheDir}).CachePath(c.Manifest.SHA256); err != nil {
				return nil
			}
		}
		v, err := artifacts.OpenVerified(path, c.Manifest.SHA256)
		if err != nil {
			return nil
		}
		admitted, err := admitVerified(c, v, path)
		if err != nil {
			return nil
		}
		out = append(out, admitted)
	}
	return out
}

// DescribeApply is the dry run's account of ApplyRouting of controllers, the admitted
// manifests when the plan could read them without a download (Local): each object as the run
// records it, in the order it is applied, then the GatewayClass. Without them it says what the
// manifests hold.
func (p RoutingPlan) DescribeApply(controllers []*RoutingController) step.Description {
	what := "the objects of the " + strings.Join(p.Controllers, " and ") + " manifests"
	rule := "every image by its pinned digest, once the cluster serves the Gateway API"
	if len(controllers) == 0 {
		items := []step.Item{step.Prose(what + " (CRDs, namespaces " + RoutingCertManagerNS + " and " + RoutingEnvoyNamespace + ", controllers), " + rule)}
		for _, o := range DescribeGatewayClass() {
			items = append(items, o)
		}
		return step.Describe(items...)
	}
	var objs []step.Object
	var left []string
	for _, c := range controllers {
		objs = append(objs, kubeobj.DescribeManifest(c.Objects)...)
		for _, l := range c.Left {
			left = append(left, c.Name+": "+l)
		}
	}
	d := step.Objects(append(objs, DescribeGatewayClass()...)...)
	d.Note = what + ", " + rule
	if len(left) > 0 {
		d.Note += "; not applied: " + strings.Join(left, ", ")
	}
	return d
}

// Installation is the Installation's routing when the controllers are installed (nil when
// not): the Gateway OCE creates for dedicated Agent Gateways in the platform namespace
// namespace, Envoy's namespace, the route's hostname, and the node's Pod CIDRs as the proxies
// Agent Gateways trust (the Envoy proxy Pods run there).
func (p RoutingPlan) Installation(ctx context.Context, c *kubeobj.Conn, namespace string) (*InstallationRouting, error) {
	if !p.Installs() {
		return nil, nil
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the cluster's nodes for the routing's trusted proxy ranges: %w", err)
	}
	cidrs, err := NodePodCIDRs(nodes.Items)
	if err != nil {
		return nil, err
	}
	return &InstallationRouting{
		GatewayName:       RoutingGatewayName,
		GatewayNamespace:  namespace,
		EnvoyNamespace:    RoutingEnvoyNamespace,
		Hostname:          RoutingHostname(namespace),
		TrustedProxyCIDRs: cidrs,
	}, nil
}

// Summary is the summary's line about routing: the route the profile set up (route, as its
// summary names it) when it set up its own, else the platform's in namespace.
func (p RoutingPlan) Summary(namespace, route string) string {
	if !p.Installs() {
		return "none: " + p.Skipped
	}
	if route == "" {
		route = RoutingHostname(namespace)
	}
	return strings.Join(p.Controllers, ", ") + " (route " + route + ")"
}
