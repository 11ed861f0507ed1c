package platform

import (
	"bytes"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/installation"
)

func workspaceFixture() []unstructured.Unstructured {
	sa := unstructured.Unstructured{}
	sa.SetAPIVersion("v1")
	sa.SetKind("ServiceAccount")
	sa.SetName("openshell-sandbox")
	role := unstructured.Unstructured{}
	role.SetAPIVersion("rbac.authorization.k8s.io/v1")
	role.SetKind("Role")
	role.SetName(WorkspaceSandboxRole)
	_ = unstructured.SetNestedSlice(role.Object, []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get"}}}, "rules")
	return []unstructured.Unstructured{sa, role}
}

// The Installation `up` writes is one the Sandbox Driver accepts: it passes the driver's
// validation, and decoding and re-encoding it changes nothing.
func TestInstallationRoundTrip(t *testing.T) {
	for _, cp := range []ControlPlane{ControlPlaneCompose, ControlPlaneKubernetes} {
		t.Run(string(cp), func(t *testing.T) {
			in, err := buildInstallation(InstallationInput{
				ClusterName: "dev", Context: "ctx-dev", ControlPlane: cp, Namespace: "oce-system",
				GatewayEndpoint: "http://openshell-gateway.oce-system.svc.cluster.local:8080", GatewayClusterIP: "10.96.0.17",
				WorkspaceResources: workspaceFixture(),
			})
			if err != nil {
				t.Fatal(err)
			}
			data, err := encodeInstallation(in)
			if err != nil {
				t.Fatal(err)
			}
			back, err := installation.Parse(data)
			if err != nil {
				t.Fatalf("written Installation does not parse: %v\n%s", err, data)
			}
			again, err := back.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, again) {
				t.Errorf("round trip changed the Installation:\n--- written\n%s\n--- re-encoded\n%s", data, again)
			}
			be := back.OpenShellBackend()
			if be == nil || *be.Configuration.InsecureTransport != installation.InsecureTransportNetworkPolicy || be.Drivers.Sandbox != sandboxDriverID {
				t.Fatalf("openshell backend: %+v", be)
			}
			sb := back.SandboxConfig()
			if len(sb.Gateway.OperatorWorkspaceResources) != 2 || sb.Gateway.WorkspaceMode != installation.WorkspaceModeOperator {
				t.Errorf("workspace resources %d, mode %q", len(sb.Gateway.OperatorWorkspaceResources), sb.Gateway.WorkspaceMode)
			}
			if n := len(sb.Gateway.NetworkPolicyResources); n != 1 || sb.Gateway.NetworkPolicyResources[0].GetName() != tenantCallbackPolicyName || sb.Gateway.NetworkPolicyResources[0].GetNamespace() != "" {
				t.Errorf("networkPolicyResources: want only the namespace-less tenant callback policy, got %d", n)
			}
			// Native OpenClaw containment needs user namespaces off, and the file says so rather
			// than leaving it to a default.
			if un := sb.Kubernetes.UserNamespaces; un == nil || *un || !strings.Contains(string(data), "userNamespaces: false") {
				t.Errorf("kubernetes.userNamespaces must be written as an explicit false, got %v", un)
			}
			wantAuth := "mode: inCluster"
			if cp == ControlPlaneCompose {
				wantAuth = "kubeconfigPath: " + containerKubeconfigPath
			}
			if !strings.Contains(string(data), wantAuth) {
				t.Errorf("%s Installation lacks %q", cp, wantAuth)
			}
		})
	}
}

// An Installation that breaks the driver's rules is never written: encodeInstallation refuses.
func TestInvalidInstallationIsNotEncoded(t *testing.T) {
	in, err := buildInstallation(InstallationInput{ClusterName: "dev", ControlPlane: ControlPlaneKubernetes, Namespace: "oce-system", GatewayEndpoint: "http://gw:8080"})
	if err != nil {
		t.Fatal(err)
	}
	in.Drivers.Sandbox.Configuration.Gateway.WorkspaceMode = "sideways"
	if _, err := encodeInstallation(in); err == nil || !strings.Contains(err.Error(), "workspaceMode") {
		t.Fatalf("invalid Installation encoded: %v", err)
	}
}

// The development profile's Gateway ingress policy admits only the OCE API and worker, and
// supervisor Pods of OCE-owned tenant namespaces and OCE's Agent Gateways, on the Gateway port.
func TestGatewayIngressPolicyAdmitsOnlyItsClients(t *testing.T) {
	p := gatewayIngressPolicy("oce-system")
	if p.Spec.PodSelector.MatchLabels["app.kubernetes.io/instance"] != GatewayRelease || len(p.Spec.PolicyTypes) != 1 || p.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Fatalf("policy selects %v for %v", p.Spec.PodSelector, p.Spec.PolicyTypes)
	}
	if len(p.Spec.Ingress) != 1 || len(p.Spec.Ingress[0].From) != 3 || p.Spec.Ingress[0].Ports[0].Port.IntValue() != GatewayPort {
		t.Fatalf("ingress rules: %+v", p.Spec.Ingress)
	}
	oce, tenant, agentGateway := p.Spec.Ingress[0].From[0], p.Spec.Ingress[0].From[1], p.Spec.Ingress[0].From[2]
	if oce.NamespaceSelector != nil || oce.PodSelector.MatchExpressions[0].Values[0] != "api" || oce.PodSelector.MatchExpressions[0].Values[1] != "worker" {
		t.Errorf("OCE peer: %+v", oce)
	}
	ns := tenant.NamespaceSelector
	if ns == nil || ns.MatchLabels[contract.LabelOperatorWorkspace] != "true" || ns.MatchExpressions[0].Key != contract.LabelNamespace || ns.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
		t.Errorf("tenant peer must require OCE-owned operator namespaces: %+v", ns)
	}
	if tenant.PodSelector.MatchLabels[contract.LabelOpenShellManagedBy] != contract.OpenShellManagedByValue || tenant.PodSelector.MatchLabels[contract.LabelBoundaryRole] != contract.BoundaryRoleSupervisor {
		t.Errorf("tenant peer must select only supervisors: %+v", tenant.PodSelector)
	}
	gns := agentGateway.NamespaceSelector
	if gns == nil || len(gns.MatchLabels) != 0 || len(gns.MatchExpressions) != 1 || gns.MatchExpressions[0].Key != contract.LabelGatewayNamespace || gns.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
		t.Errorf("Agent Gateway peer must require namespaces labelled %s: %+v", contract.LabelGatewayNamespace, gns)
	}
	if got := agentGateway.PodSelector.MatchLabels; len(got) != 2 || got[contract.LabelManagedBy] != contract.ManagedByOCE || got[contract.LabelWorkloadRole] != contract.WorkloadRoleGateway {
		t.Errorf("Agent Gateway peer must select only OCE's gateway Pods: %+v", agentGateway.PodSelector)
	}
}

// The worker may bind and escalate only the pinned workspace Role.
func TestWorkspaceRBACLimitsBindAndEscalate(t *testing.T) {
	for _, r := range workspaceRBACRole().Rules {
		for _, v := range r.Verbs {
			if (v == "bind" || v == "escalate") && (len(r.ResourceNames) != 1 || r.ResourceNames[0] != WorkspaceSandboxRole) {
				t.Errorf("rule %+v grants %s beyond Role %s", r, v, WorkspaceSandboxRole)
			}
			if v == "*" {
				t.Errorf("wildcard verb in %+v", r)
			}
		}
	}
}

// The Compose profile's Installation names the Agent runtime it imported and the node it runs
// on: images and runtime appear under drivers.compute.configuration with the
// proxy ranges under its network, and without a control plane they are left out.
func TestInstallationComputeExtras(t *testing.T) {
	extras := &ComputeExtras{
		Images:                       ComputeImages{Gateway: "docker.io/library/openclaw-enterprise-runtime@sha256:" + strings.Repeat("a", 64), Agent: "docker.io/library/openclaw-enterprise-runtime@sha256:" + strings.Repeat("a", 64), RequireImmutableDigest: true},
		Runtime:                      ComputeRuntime{GatewayStorageClassName: "local-path", TransportSecretPrefix: "openclaw-agent-transport", GatewayNodeSelector: map[string]string{"kubernetes.io/hostname": "k3d-dev-server-0"}},
		PluginStatusProxySourceCIDRs: []string{"10.42.0.1/32"},
		GatewayTrustedProxyCIDRs:     []string{"127.0.0.1/32"},
	}
	for _, c := range []struct {
		extras *ComputeExtras
		want   []string
		absent []string
	}{
		{extras, []string{"requireImmutableDigest: true", "gateway: docker.io/library/openclaw-enterprise-runtime@sha256:", "gatewayStorageClassName: local-path", "transportSecretPrefix: openclaw-agent-transport", "kubernetes.io/hostname: k3d-dev-server-0", "pluginStatusProxySourceCidrs:\n", "- 10.42.0.1/32", "gatewayTrustedProxyCidrs:\n", "- 127.0.0.1/32"}, nil},
		{nil, nil, []string{"images:", "runtime:", "pluginStatusProxySourceCidrs", "gatewayTrustedProxyCidrs"}},
	} {
		in, err := buildInstallation(InstallationInput{ClusterName: "dev", Context: "k3d-dev", ControlPlane: ControlPlaneCompose, Namespace: "openshell-system",
			GatewayEndpoint: "http://k3d-dev-server-0:30051", GatewayClusterIP: "10.43.0.9", WorkspaceResources: workspaceFixture(), Compute: c.extras})
		if err != nil {
			t.Fatal(err)
		}
		data, err := encodeInstallation(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(data), w) {
				t.Errorf("the Installation lacks %q:\n%s", w, data)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(string(data), a) {
				t.Errorf("the Installation without a control plane has %q:\n%s", a, data)
			}
		}
	}
}

// With routing controllers installed, the Installation names the route (gatewayRouting) and
// trusts the node's Pod range as the proxies, instead of listing Gateway clients; a routing it
// cannot stand behind is refused before anything is written.
func TestInstallationRouting(t *testing.T) {
	rt := &InstallationRouting{GatewayName: RoutingGatewayName, GatewayNamespace: "oce-system", EnvoyNamespace: RoutingEnvoyNamespace,
		Hostname: RoutingHostname("oce-system"), TrustedProxyCIDRs: []string{"10.42.0.0/24"}}
	in, err := buildInstallation(InstallationInput{ClusterName: "dev", ControlPlane: ControlPlaneKubernetes, Namespace: "oce-system", GatewayEndpoint: "http://gw:8080",
		Compute: &ComputeExtras{GatewayTrustedProxyCIDRs: []string{"127.0.0.1/32"}}, Routing: rt})
	if err != nil {
		t.Fatal(err)
	}
	data, err := encodeInstallation(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gatewayRouting:\n", "gatewayName: openclaw-enterprise-agent-gateways\n", "gatewayNamespace: oce-system\n", "envoyNamespace: envoy-gateway-system\n",
		"hostname: " + RoutingHostname("oce-system") + "\n", "gatewayTrustedProxyCidrs:\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("Installation lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "gatewayClients") || strings.Contains(string(data), "127.0.0.1/32") || !strings.Contains(string(data), "- 10.42.0.0/24\n") || strings.Contains(string(data), "endpointPort") {
		t.Errorf("behind the route the Installation trusts the node's Pod range only, lists no clients and names no endpoint port inside the cluster:\n%s", data)
	}

	// A control plane beside the cluster reaches the route on the node: the hostname is the
	// node's, the endpoint port the Envoy Service's NodePort, and the proxies trusted are the
	// Envoy Pods' own addresses.
	beside := *rt
	beside.Hostname, beside.EndpointPort, beside.TrustedProxyCIDRs = "k3d-dev-server-0", 31443, []string{"10.42.0.17/32"}
	in, err = buildInstallation(InstallationInput{ClusterName: "dev", ControlPlane: ControlPlaneCompose, Namespace: "openshell-system", GatewayEndpoint: "http://gw:8080", Routing: &beside})
	if err != nil {
		t.Fatal(err)
	}
	if data, err = encodeInstallation(in); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hostname: k3d-dev-server-0\n", "endpointPort: 31443\n", "- 10.42.0.17/32\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the Installation beside the cluster lacks %q:\n%s", want, data)
		}
	}
	if h := RoutingHostname("oce-system"); !strings.HasPrefix(h, "occ-gateway-") || !strings.HasSuffix(h, ".envoy-gateway-system.svc.cluster.local") || len(h) != len("occ-gateway-")+12+len(".envoy-gateway-system.svc.cluster.local") || h == RoutingHostname("openshell-system") {
		t.Errorf("hostname %q", h)
	}
	for _, bad := range []struct {
		change func(*InstallationRouting)
		want   string
	}{
		{func(r *InstallationRouting) { r.TrustedProxyCIDRs = nil }, "network.gatewayTrustedProxyCidrs is empty"},
		{func(r *InstallationRouting) { r.TrustedProxyCIDRs = []string{"10.42.0.7/16"} }, `"10.42.0.7/16" is not a canonical prefix`},
		{func(r *InstallationRouting) { r.Hostname = "Not_A_Host" }, `gatewayRouting.hostname "Not_A_Host"`},
		{func(r *InstallationRouting) { r.GatewayNamespace = "" }, "gatewayRouting.gatewayNamespace"},
		{func(r *InstallationRouting) { r.EndpointPort = 65536 }, "gatewayRouting.endpointPort 65536 must be between 1 and 65535"},
		{func(r *InstallationRouting) { r.EndpointPort = -1 }, "gatewayRouting.endpointPort -1 must be between 1 and 65535"},
	} {
		r := *rt
		bad.change(&r)
		if _, err := buildInstallation(InstallationInput{ClusterName: "dev", ControlPlane: ControlPlaneKubernetes, Namespace: "oce-system", GatewayEndpoint: "http://gw:8080", Routing: &r}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("routing %+v: %v, want %q", r, err, bad.want)
		}
	}
}

// The Compose control plane reaches the Gateway through the node's fixed port, the Kubernetes one
// through a ClusterIP Service; `-n UPPER` is refused with Kubernetes' rule for the name.
func TestGatewayServiceAndNamespaceRule(t *testing.T) {
	if typ, port := ControlPlaneCompose.Service(); typ != "NodePort" || port != 30051 {
		t.Errorf("compose: %s %d", typ, port)
	}
	if typ, port := ControlPlaneKubernetes.Service(); typ != "ClusterIP" || port != 0 {
		t.Errorf("kubernetes: %s %d", typ, port)
	}
	if err := CheckNamespace("oce-dev", "-n/--namespace"); err != nil {
		t.Errorf("oce-dev: %v", err)
	}
	if err := CheckNamespace("UPPER", "-n/--namespace"); err == nil || !strings.Contains(err.Error(), `-n/--namespace "UPPER" is not a valid namespace name`) {
		t.Errorf("UPPER: %v", err)
	}
}
