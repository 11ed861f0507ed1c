package occdev

import (
	"fmt"
	"path/filepath"
)

// The Describe functions say, without any I/O, what each step would create, for --dry-run.

func describePackage(p *Plan) []string {
	return []string{"directory " + filepath.Join(p.StateDir, packagedDir) + " with the Gateway and Workspace charts packaged at the pinned version"}
}

func describeRender(*Plan) []string {
	return []string{"nothing created; renders the Workspace chart once (ServiceAccount, Role, RoleBinding, NetworkPolicy only) for the Installation"}
}

func describeGateway(p *Plan) []string {
	svc := "Service " + p.Namespace + "/" + GatewayServiceName + " of type ClusterIP"
	if p.ServiceType == "NodePort" {
		svc = fmt.Sprintf("Service %s/%s of type NodePort on port %d", p.Namespace, GatewayServiceName, p.NodePort)
	}
	return []string{
		"Helm release " + p.Namespace + "/" + GatewayRelease + " (Helm SDK; images by digest from the pins)",
		svc,
	}
}

func describePolicies(p *Plan) []string {
	return []string{
		"NetworkPolicy " + p.Namespace + "/" + gatewayIngressPolicyName + " (Gateway ingress only from the OCE API/worker and from supervisor Pods of OCE-owned tenant namespaces)",
		"NetworkPolicy " + p.Namespace + "/" + oceEgressPolicyName + " (OCE API/worker egress to the Gateway)",
		"ClusterRole " + workspaceRBACName + " (workspace Role/RoleBinding management; bind/escalate only on Role " + WorkspaceSandboxRole + ")",
		"ClusterRoleBinding " + workspaceRBACName + " (to ServiceAccount " + p.Namespace + "/" + oceWorkerServiceAccount + ")",
	}
}
