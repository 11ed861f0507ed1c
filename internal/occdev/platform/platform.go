// Package platform is layer 2 of `occ dev up`: the sandbox platform on the cluster. It holds
// the typed manifests (the platform namespace, RuntimeClass, the Gateway's JWT key Secret, the
// development NetworkPolicies and RBAC), the Agent Sandbox manifest (selected, fetched or read,
// applied), the routing controllers (planned from the pins, fetched, admitted, applied), the
// Gateway chart's values, its render check and its install with the Helm SDK, the readiness
// waits, the Gateway Health check and the Installation the OpenShell Sandbox Driver reads, each
// with its dry-run description.
//
// Every function takes its own inputs: a connection to the cluster that records what it
// creates (kubeobj.Conn), names and values. None of them knows the flow that calls it.
package platform

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
)

// ControlPlane is where the OCE control plane is meant to run, which decides how the Gateway is
// published and how the Installation reaches the cluster.
type ControlPlane string

const (
	// ControlPlaneCompose runs OCE in Compose next to the cluster: the Gateway is a NodePort
	// (30051) on the node, and the drivers authenticate with a mounted kubeconfig.
	ControlPlaneCompose ControlPlane = "compose"
	// ControlPlaneKubernetes runs OCE inside the cluster: the Gateway is a ClusterIP Service and
	// the drivers use in-cluster authentication.
	ControlPlaneKubernetes ControlPlane = "kubernetes"
)

// Service is how the Gateway's Service publishes it to the control plane: a NodePort
// (GatewayNodePort) for one beside the cluster, which reaches it through the node, and a
// ClusterIP Service for one inside it.
func (cp ControlPlane) Service() (corev1.ServiceType, int32) {
	if cp == ControlPlaneCompose {
		return corev1.ServiceTypeNodePort, GatewayNodePort
	}
	return corev1.ServiceTypeClusterIP, 0
}

// CheckNamespace applies Kubernetes' rule for a namespace's name to ns, which setting gave.
func CheckNamespace(ns, setting string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return &option.Error{Option: setting, Value: ns, Rule: "is not a valid namespace name (" + strings.Join(errs, "; ") + ")",
			Fix: "use lower-case letters, digits and '-', at most 63 characters"}
	}
	return nil
}

// Fixed names of the pinned OpenShell and of the development profile.
const (
	GatewayRelease       = charts.GatewayRelease
	GatewayServiceName   = charts.GatewayRelease
	GatewayPort          = 8080
	GatewayNodePort      = charts.DevelopmentNodePort
	RuntimeClassName     = charts.RuntimeClassName
	RuntimeClassHandler  = "runc"
	GatewayJWTSecretName = "openshell-gateway-jwt-keys"
	WorkspaceSandboxRole = "openshell-workspace-sandbox"
)

// EnsureNamespace creates the platform namespace.
func EnsureNamespace(ctx context.Context, c *kubeobj.Conn, name string) error {
	_, err := c.Ensure(ctx, Namespace(name), kubeobj.Converge)
	return err
}

// EnsureRuntimeClass creates the RuntimeClass every Sandbox Pod runs with.
func EnsureRuntimeClass(ctx context.Context, c *kubeobj.Conn) error {
	_, err := c.Ensure(ctx, RuntimeClass(), kubeobj.Converge)
	return err
}

// EnsureJWTSecret creates the Gateway's JWT signing key Secret. A Secret this state already
// made is kept as it is: regenerating the key on a repeated step would only invalidate tokens.
func EnsureJWTSecret(ctx context.Context, c *kubeobj.Conn, namespace string) error {
	secret, err := JWTSecret(namespace)
	if err != nil {
		return err
	}
	_, err = c.Ensure(ctx, secret, kubeobj.Keep)
	return err
}

// ApplyDevelopmentPolicies creates the development NetworkPolicies and RBAC around the Gateway.
func ApplyDevelopmentPolicies(ctx context.Context, c *kubeobj.Conn, namespace string) error {
	for _, obj := range DevelopmentPolicies(namespace) {
		if _, err := c.Ensure(ctx, obj, kubeobj.Converge); err != nil {
			return err
		}
	}
	return nil
}

// ApplyAgentSandbox applies the objects of the verified Agent Sandbox manifest, its CRDs
// established before anything that may use them, and waits until the API server's discovery
// serves every API version they add. Helm's install reads .Capabilities.APIVersions from
// discovery, and an established CRD can still be missing from discovery for a moment: the
// Gateway chart's Agent Sandbox preflight would then fail on a cluster that has the CRDs.
func ApplyAgentSandbox(ctx context.Context, c *kubeobj.Conn, objs []*unstructured.Unstructured, timeout time.Duration) error {
	if err := c.EnsureManifest(ctx, objs, timeout); err != nil {
		return fmt.Errorf("Agent Sandbox manifest: %w", err)
	}
	versions, err := ManifestAPIVersions(objs)
	if err != nil {
		return fmt.Errorf("Agent Sandbox manifest: %w", err)
	}
	return WaitDiscoveryServes(ctx, c.Kube.Discovery(), versions, timeout)
}

// WaitDiscoveryServes waits until discovery lists every API version of versions (both the
// "group/version" and the "group/version/Kind" forms), polling: discovery has no watch.
func WaitDiscoveryServes(ctx context.Context, dc discovery.DiscoveryInterface, versions []string, timeout time.Duration) error {
	kinds := map[string][]string{}
	for _, v := range versions {
		parts := strings.Split(v, "/")
		if len(parts) == 3 {
			gv := parts[0] + "/" + parts[1]
			kinds[gv] = append(kinds[gv], parts[2])
		}
	}
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		missing = missing[:0]
		for gv, want := range kinds {
			list, err := dc.ServerResourcesForGroupVersion(gv)
			if err != nil {
				if apierrors.IsNotFound(err) {
					missing = append(missing, gv)
					continue
				}
				return false, fmt.Errorf("discover %s: %w", gv, err)
			}
			for _, k := range want {
				if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == k }) {
					missing = append(missing, gv+"/"+k)
				}
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		if len(missing) > 0 && ctx.Err() == nil {
			slices.Sort(missing)
			return fmt.Errorf("the API server's discovery does not serve %s within %s of the Agent Sandbox CRDs being established, so Helm would not see them (raise --startup-timeout if the apiserver is slow): %w", strings.Join(missing, ", "), timeout, err)
		}
		return fmt.Errorf("wait for discovery to serve the Agent Sandbox API versions: %w", err)
	}
	return nil
}
