package platform

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// The routing the Installation names: the Gateway OCE's chart creates for dedicated Agent
// Gateways, the namespace Envoy Gateway runs its proxies in, and the GatewayClass.
const (
	RoutingGatewayName     = "openclaw-enterprise-agent-gateways"
	RoutingEnvoyNamespace  = "envoy-gateway-system"
	RoutingCertManagerNS   = "cert-manager"
	gatewayAPICRDSuffix    = ".gateway.networking.k8s.io"
	routingPinsFixTemplate = "add %s@sha256:<digest> (the digest its tag serves; occ dev pins verify checks it) to %s.images in the pin file, or leave the pin file's routing section out to install no routing controllers"
)

// RoutingController is a routing controller's manifest as up applies it: every image it names
// rewritten to the pinned digest, and the cluster's own Gateway API CRDs left out.
type RoutingController struct {
	Name    string
	Version string
	// Objects are applied in manifest order (Namespaces and CRDs first).
	Objects []*unstructured.Unstructured
	// Images are the pins the manifest names, in pin file order.
	Images []pins.Image
	// Left are the manifest's objects up does not apply, with the reason.
	Left []string
}

// Workloads are the controller's Deployments and StatefulSets, which up waits for.
func (c *RoutingController) Workloads() []Workload { return WorkloadsIn(c.Objects, manifestNamespace) }

// UnpinnedRoutingImageError lists the images of a routing manifest that its pins do not name,
// each with where the manifest names it.
type UnpinnedRoutingImageError struct {
	Controller string
	Key        string
	Unpinned   []images.FoundImage
	Unused     []pins.Image
}

func (e *UnpinnedRoutingImageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the %s manifest names images the pins do not fix by digest, so occ will not install it:", e.Controller)
	for _, f := range e.Unpinned {
		ref := f.Image
		if img, err := pins.ParseImage(f.Image); err == nil {
			ref = img.Name() + ":" + img.Tag
		}
		fmt.Fprintf(&b, "\n  - %s; "+routingPinsFixTemplate, f, ref, e.Key)
	}
	for _, u := range e.Unused {
		fmt.Fprintf(&b, "\n  - %s.images pins %s, which the manifest names nowhere (a pin of another release?); remove it", e.Key, u.String())
	}
	return b.String()
}

// AdmitRoutingManifest reads a routing controller's release manifest (data, from source) and
// returns it as up applies it. Release manifests name their images by tag; each must be one of
// the controller's pins by repository and tag (or already by the pinned digest), and is
// rewritten to the pin's digest reference wherever the manifest names it (containers, flags,
// environment, configuration). An image without a pin, and a pin the manifest never names, are
// refused. The manifest's Gateway API CRDs are left out: the cluster owns them (k3s installs its
// own), and replacing them would change their stored versions under the cluster.
func AdmitRoutingManifest(c pins.NamedController, data []byte, source string) (*RoutingController, error) {
	found, err := images.FindImages(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s manifest %s: %w", c.Name, source, err)
	}
	replace := map[string]string{}
	used := make([]bool, len(c.Images))
	var unpinned []images.FoundImage
	for _, f := range found {
		i := routingPin(f.Image, c.Images)
		if i < 0 {
			unpinned = append(unpinned, f)
			continue
		}
		used[i] = true
		replace[f.Image] = c.Images[i].DigestReference()
	}
	var unused []pins.Image
	for i, u := range used {
		if !u {
			unused = append(unused, c.Images[i])
		}
	}
	if len(unpinned) > 0 || len(unused) > 0 {
		return nil, &UnpinnedRoutingImageError{Controller: c.Name + " " + c.Version, Key: c.Key, Unpinned: unpinned, Unused: unused}
	}
	rewritten := data
	for from, to := range replace {
		if from == to {
			continue
		}
		// The reference as a whole value: neither preceded nor followed by more of a reference
		// (a registry before a short name, a longer tag after it).
		re := regexp.MustCompile(`(^|[^A-Za-z0-9._@:/-])` + regexp.QuoteMeta(from) + `([^A-Za-z0-9._@:/-]|$)`)
		rewritten = re.ReplaceAll(rewritten, []byte("${1}"+to+"${2}"))
	}
	var expected []images.ExpectedImage
	for _, p := range c.Images {
		expected = append(expected, images.ExpectedImage{Pin: p, Role: c.Name, ValuesKeys: []string{c.Key + ".images"}, Required: true})
	}
	// The rewritten manifest is checked like a chart: nothing but the pinned digests remains.
	if _, err := images.CheckRenderedImages(c.Name+" "+c.Version, bytes.NewReader(rewritten), images.Rules{Expected: expected}); err != nil {
		return nil, err
	}
	objs, err := artifacts.ParseYAML(rewritten, source)
	if err != nil {
		return nil, fmt.Errorf("%s manifest: %w", c.Name, err)
	}
	out := &RoutingController{Name: c.Name, Version: c.Version, Images: c.Images}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && strings.HasSuffix(o.GetName(), gatewayAPICRDSuffix) {
			out.Left = append(out.Left, "CustomResourceDefinition "+o.GetName()+" (the cluster's own Gateway API)")
			continue
		}
		out.Objects = append(out.Objects, o)
	}
	if len(out.Objects) == 0 {
		return nil, fmt.Errorf("%s manifest %s holds no objects", c.Name, source)
	}
	return out, nil
}

// routingPin is the index of the pin ref names: the same repository and tag, and no other
// digest; -1 when none does.
func routingPin(ref string, pinned []pins.Image) int {
	img, err := pins.ParseImage(ref)
	if err != nil {
		return -1
	}
	for i, p := range pinned {
		if img.Name() != p.Name() {
			continue
		}
		if img.Digest != "" && img.Digest == p.Digest {
			return i
		}
		if img.Digest == "" && img.Tag != "" && img.Tag == p.Tag {
			return i
		}
	}
	return -1
}

// podSpecPaths are where the workload kinds of the routing manifests keep their Pod spec.
var podSpecPaths = map[string][]string{
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
	"Pod":         {"spec"},
}

// SetPullPolicy sets the pull policy of every container of the controller's workloads: Never
// where occ imported and verified the images in the node (a Pod must never fetch another copy),
// IfNotPresent where the cluster pulls them by digest itself.
func (c *RoutingController) SetPullPolicy(policy corev1.PullPolicy) error {
	for _, o := range c.Objects {
		path, ok := podSpecPaths[o.GetKind()]
		if !ok {
			continue
		}
		for _, list := range []string{"initContainers", "containers"} {
			field := append(append([]string{}, path...), list)
			containers, found, err := unstructured.NestedSlice(o.Object, field...)
			if err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
			if !found {
				continue
			}
			for i := range containers {
				m, ok := containers[i].(map[string]any)
				if !ok {
					return fmt.Errorf("%s %s: %s[%d] is not an object", o.GetKind(), o.GetName(), list, i)
				}
				m["imagePullPolicy"] = string(policy)
			}
			if err := unstructured.SetNestedSlice(o.Object, containers, field...); err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return nil
}

// The GatewayClass OCE's chart names for the Gateway of its dedicated Agent Gateways, and the
// Envoy Gateway controller that accepts it.
const (
	RoutingGatewayClass     = "eg"
	envoyGatewayController  = "gateway.envoyproxy.io/gatewayclass-controller"
	gatewayAPIGroupVersion  = "gateway.networking.k8s.io/v1"
	gatewayAPIGatewayClass  = gatewayAPIGroupVersion + "/GatewayClass"
	gatewayClassAcceptedTyp = "Accepted"
	// gatewayClassAcceptedReady is what WaitGatewayClassAccepted waits to see, for the dry run.
	gatewayClassAcceptedReady = "Envoy Gateway (" + envoyGatewayController + ") accepts it: its " + gatewayClassAcceptedTyp + " condition True"
)

// GatewayClass is the GatewayClass the routing's Gateway is of, handled by Envoy Gateway.
func GatewayClass() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(gatewayAPIGroupVersion)
	u.SetKind("GatewayClass")
	u.SetName(RoutingGatewayClass)
	_ = unstructured.SetNestedField(u.Object, envoyGatewayController, "spec", "controllerName")
	return u
}

// DescribeGatewayClass is the dry run's account of the GatewayClass.
func DescribeGatewayClass() []step.Object {
	return kubeobj.Describe([]runtime.Object{GatewayClass()}, map[string]string{"GatewayClass " + RoutingGatewayClass: "controller " + envoyGatewayController})
}

// ApplyRouting applies the admitted routing manifests, their containers with the pull policy
// policy (Never where occ imported the images into the node), then the GatewayClass once the
// cluster serves the Gateway API (k3s installs it by itself, shortly after it starts; an
// existing cluster must have it installed).
func ApplyRouting(ctx context.Context, c *kubeobj.Conn, controllers []*RoutingController, policy corev1.PullPolicy, timeout time.Duration) error {
	for _, rc := range controllers {
		if err := rc.SetPullPolicy(policy); err != nil {
			return fmt.Errorf("%s %s manifest: %w", rc.Name, rc.Version, err)
		}
	}
	if err := WaitDiscoveryServes(ctx, c.Kube.Discovery(), []string{gatewayAPIGroupVersion, gatewayAPIGatewayClass}, timeout); err != nil {
		return fmt.Errorf("the cluster serves no Gateway API (%s), which the routing needs: k3s installs it by itself; on an existing cluster install the Gateway API CRDs first: %w", gatewayAPIGatewayClass, err)
	}
	for _, rc := range controllers {
		if err := c.EnsureManifest(ctx, rc.Objects, timeout); err != nil {
			return fmt.Errorf("%s %s manifest: %w", rc.Name, rc.Version, err)
		}
	}
	if _, err := c.Ensure(ctx, GatewayClass(), kubeobj.Converge); err != nil {
		return fmt.Errorf("GatewayClass %s: %w", RoutingGatewayClass, err)
	}
	return nil
}

// WaitGatewayClassAccepted waits until Envoy Gateway accepts the GatewayClass (its Accepted
// condition True for the class's current generation), polling within timeout.
func WaitGatewayClassAccepted(ctx context.Context, c *kubeobj.Conn, timeout time.Duration) error {
	gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	return waitCondition(ctx, c, gvr, "GatewayClass", "", RoutingGatewayClass, gatewayClassAcceptedTyp, timeout, timeout,
		fmt.Sprintf("Envoy Gateway (%s) accepts it: check the envoy-gateway Pod's logs in namespace %s", envoyGatewayController, RoutingEnvoyNamespace))
}
