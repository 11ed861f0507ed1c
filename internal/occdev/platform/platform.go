// Package platform is layer 2 of `occ dev up`: the sandbox platform on the cluster. It holds
// the typed manifests (the platform namespace, RuntimeClass, the Gateway's JWT key Secret, the
// development NetworkPolicies and RBAC of seed 000), the Gateway chart's values and its install
// with the Helm SDK, the readiness waits, the Gateway Health check and the Installation the
// OpenShell Sandbox Driver reads.
//
// Every function takes its own inputs: a connection to the cluster that records what it
// creates (kubeobj.Conn), names and values. None of them knows the flow that calls it.
package platform

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
)

// ControlPlane is where the OCE control plane is meant to run, which decides how the Gateway is
// published and how the Installation reaches the cluster (reference §3.2 / §3.3).
type ControlPlane string

const (
	// ControlPlaneCompose runs OCE in Compose next to the cluster: the Gateway is a NodePort
	// (30051) on the node, and the drivers authenticate with a mounted kubeconfig.
	ControlPlaneCompose ControlPlane = "compose"
	// ControlPlaneKubernetes runs OCE inside the cluster: the Gateway is a ClusterIP Service and
	// the drivers use in-cluster authentication.
	ControlPlaneKubernetes ControlPlane = "kubernetes"
)

// Fixed names of the pinned OpenShell (reference §4) and of the development profile.
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

// ApplyDevelopmentPolicies creates the development NetworkPolicies and RBAC of seed 000.
func ApplyDevelopmentPolicies(ctx context.Context, c *kubeobj.Conn, namespace string) error {
	for _, obj := range DevelopmentPolicies(namespace) {
		if _, err := c.Ensure(ctx, obj, kubeobj.Converge); err != nil {
			return err
		}
	}
	return nil
}

// ApplyAgentSandbox applies the objects of the verified Agent Sandbox manifest, its CRDs
// established before anything that may use them.
func ApplyAgentSandbox(ctx context.Context, c *kubeobj.Conn, objs []*unstructured.Unstructured, timeout time.Duration) error {
	if err := c.EnsureManifest(ctx, objs, timeout); err != nil {
		return fmt.Errorf("Agent Sandbox manifest: %w", err)
	}
	return nil
}
