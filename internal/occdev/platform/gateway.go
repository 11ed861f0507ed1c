package platform

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// GatewayInstall are the inputs of InstallGateway.
type GatewayInstall struct {
	// Namespace is the platform namespace; the release and its Service live there.
	Namespace string
	// Chart is the packaged, pinned Gateway chart.
	Chart *chart.Chart
	// Images are the pinned OpenShell images, set by digest in the chart values.
	Images pins.Images
	// ServiceType is NodePort (Compose profile) or ClusterIP (Kubernetes profile); NodePort is
	// the fixed development port of a NodePort Service.
	ServiceType corev1.ServiceType
	NodePort    int32
	// PullPolicy is IfNotPresent on a cluster occ did not create (it pulls by digest), Never
	// where occ imported the verified images itself.
	PullPolicy corev1.PullPolicy
	// Recorder receives the release before the install starts.
	Recorder state.Recorder
	// Timeout bounds Helm's own operations.
	Timeout time.Duration
}

// Gateway is what the install produced, for the later steps.
type Gateway struct {
	Release *release.Release
	// ClusterIP is the Gateway Service's cluster IP, which the Installation names.
	ClusterIP string
}

// GatewayValues are the Gateway chart values of this profile.
func GatewayValues(g GatewayInstall) (map[string]any, error) {
	v, err := charts.NewGatewayValues(charts.GatewayOptions{
		Images:      g.Images,
		ServiceType: string(g.ServiceType),
		NodePort:    g.NodePort,
		PullPolicy:  string(g.PullPolicy),
	})
	if err != nil {
		return nil, err
	}
	return v.Map()
}

// InstallGateway installs (or, on a repeated step, adopts this state's) pinned Gateway chart
// with the Helm SDK, then reads the Service the chart made.
func InstallGateway(ctx context.Context, c *kubeobj.Conn, g GatewayInstall) (*Gateway, error) {
	values, err := GatewayValues(g)
	if err != nil {
		return nil, err
	}
	rel, err := helmrelease.Ensure(ctx, helmrelease.EnsureOptions{
		Release: helmrelease.Release{Access: c.Access, Namespace: g.Namespace, Name: GatewayRelease},
		Chart:   g.Chart, Values: values, Owner: c.Owner(), Recorder: g.Recorder, Timeout: g.Timeout,
	})
	if err != nil {
		return nil, err
	}
	ip, err := inspectGatewayService(ctx, c, g)
	if err != nil {
		return nil, err
	}
	return &Gateway{Release: rel, ClusterIP: ip}, nil
}

// inspectGatewayService reads the Gateway Service the chart made: its ClusterIP goes into the
// Installation, and the Compose profile depends on the fixed NodePort.
func inspectGatewayService(ctx context.Context, c *kubeobj.Conn, g GatewayInstall) (string, error) {
	ns := g.Namespace
	svc, err := c.Kube.CoreV1().Services(ns).Get(ctx, GatewayServiceName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read the Gateway Service %s/%s the chart should have created: %w", ns, GatewayServiceName, err)
	}
	if net.ParseIP(svc.Spec.ClusterIP) == nil {
		return "", fmt.Errorf("OpenShell Gateway returned an invalid ClusterIP %q (Service %s/%s)", svc.Spec.ClusterIP, ns, GatewayServiceName)
	}
	if g.ServiceType == corev1.ServiceTypeNodePort {
		kept := false
		for _, p := range svc.Spec.Ports {
			kept = kept || p.NodePort == g.NodePort
		}
		if svc.Spec.Type != corev1.ServiceTypeNodePort || !kept {
			return "", fmt.Errorf("OpenShell gateway did not retain its development NodePort %d (Service %s/%s is %s): another Service may hold the port", g.NodePort, ns, GatewayServiceName, svc.Spec.Type)
		}
	}
	return svc.Spec.ClusterIP, nil
}

// ChartImages are the images the Gateway chart's values name, as GatewayValues sets them: every
// image the pins say the Gateway runs (pins.GatewayImagesOf of g.Images), under its values key.
func (g GatewayInstall) ChartImages() []step.Image {
	pinned := pins.GatewayImagesOf(g.Images)
	out := make([]step.Image, 0, len(pinned))
	for _, img := range pinned {
		out = append(out, step.Image{Reference: img.Image.DigestReference(), Where: "the Gateway chart's values",
			Note: img.Gateway.Component + ".image, pullPolicy " + string(g.PullPolicy)})
	}
	return out
}

// Describe is the dry run's account of InstallGateway of g (whose Chart and Recorder it does
// not need): the release as a typed object, as its record names it, with the pinned OpenShell
// version and the images the chart's values name (ChartImages, typed beside it; the release's
// line names them), and its Service with its type and port.
func (g GatewayInstall) Describe(version string) step.Description {
	svc := step.Object{Kind: "Service", Namespace: g.Namespace, Name: GatewayServiceName, Note: "of type ClusterIP"}
	if g.ServiceType == corev1.ServiceTypeNodePort {
		svc.Note = fmt.Sprintf("of type NodePort on port %d", g.NodePort)
	}
	images := g.ChartImages()
	refs := make([]string, 0, len(images))
	for _, img := range images {
		refs = append(refs, img.Reference)
	}
	d := step.Objects(step.Object{Kind: "Helm release", Namespace: g.Namespace, Name: GatewayRelease,
		Note: "Helm SDK; OpenShell " + version + " images by digest, pullPolicy " + string(g.PullPolicy) + ": " + strings.Join(refs, ", ")}, svc)
	d.Images = images
	return d
}
