package platform

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/step"
)

// The OCE control plane's names, as its Helm chart labels and names them: the
// API registers credential-source providers and the worker provisions Sandboxes, so both talk
// to the Gateway; nothing else of OCE does.
const (
	oceAppName              = "openclaw-enterprise"
	oceWorkerServiceAccount = "openclaw-enterprise-worker"

	gatewayIngressPolicyName = "openclaw-development-openshell-ingress"
	oceEgressPolicyName      = "openclaw-enterprise-openshell-egress"
	workspaceRBACName        = "openclaw-development-openshell-workspace-rbac"
	tenantCallbackPolicyName = "allow-openshell-sandbox-callback"
)

func gatewayPodLabels() map[string]string {
	return map[string]string{contract.LabelName: "openshell", contract.LabelInstance: GatewayRelease}
}

func supervisorPodLabels() map[string]string {
	return map[string]string{contract.LabelOpenShellManagedBy: contract.OpenShellManagedByValue, contract.LabelBoundaryRole: contract.BoundaryRoleSupervisor}
}

// agentGatewayPodLabels select OCE's dedicated Agent Gateway Pods, which relay to the Harnesses
// this Gateway exposes (the Installation's network.providerHarness names it to them).
func agentGatewayPodLabels() map[string]string {
	return map[string]string{contract.LabelManagedBy: contract.ManagedByOCE, contract.LabelWorkloadRole: contract.WorkloadRoleGateway}
}

// oceControlPlaneClients selects the OCE API and worker Pods.
func oceControlPlaneClients() *metav1.LabelSelector {
	return &metav1.LabelSelector{
		MatchLabels: map[string]string{contract.LabelName: oceAppName, contract.LabelInstance: oceAppName},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: contract.LabelComponent, Operator: metav1.LabelSelectorOpIn, Values: []string{"api", "worker"},
		}},
	}
}

func gatewayPort() []networkingv1.NetworkPolicyPort {
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(GatewayPort)
	return []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}
}

// Namespace is the platform namespace the Gateway runs in.
func Namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// RuntimeClass is the RuntimeClass the Gateway puts on every Sandbox Pod; the handler is
// the node's default runc, as in the reference profile.
func RuntimeClass() *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: RuntimeClassName}, Handler: RuntimeClassHandler}
}

// JWTSecret generates the Gateway's JWT signing key pair. The private key exists only in
// this Secret: it is never written to the state directory, printed or logged.
func JWTSecret(namespace string) (*corev1.Secret, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the Gateway JWT key: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode the Gateway JWT key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode the Gateway JWT public key: %w", err)
	}
	kid := make([]byte, 16)
	if _, err := rand.Read(kid); err != nil {
		return nil, fmt.Errorf("generate the Gateway JWT key id: %w", err)
	}
	return jwtSecret(namespace, jwtKey{
		signing: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}),
		public:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
		id:      []byte("openshell-" + hex.EncodeToString(kid)),
	}), nil
}

// jwtKey is the encoded key material of the JWT Secret. Its zero value has no material, so the
// dry run builds the Secret with it and describes the keys without a value to leak.
type jwtKey struct {
	signing, public, id []byte
}

// jwtSecret is the one place that names the JWT Secret's keys: JWTSecret fills them with a new
// key and DescribeJWTSecret lists them.
func jwtSecret(namespace string, key jwtKey) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayJWTSecretName, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"signing.pem": key.signing,
			"public.pem":  key.public,
			"kid":         key.id,
		},
	}
}

// DescribeNamespace, DescribeRuntimeClass, DescribeJWTSecret and DescribeDevelopmentPolicies
// are the dry run's account of what the Ensure and Apply functions below create, built from
// the same manifests.
func DescribeNamespace(name string) []step.Object {
	return kubeobj.Describe([]runtime.Object{Namespace(name)}, nil)
}

func DescribeRuntimeClass() []step.Object {
	rc := RuntimeClass()
	return kubeobj.Describe([]runtime.Object{rc}, map[string]string{"RuntimeClass " + rc.Name: "handler " + rc.Handler})
}

func DescribeJWTSecret(namespace string) []step.Object {
	return kubeobj.Describe([]runtime.Object{jwtSecret(namespace, jwtKey{})},
		map[string]string{"Secret " + GatewayJWTSecretName: "a new ed25519 key; never printed or stored in the state"})
}

// DevelopmentPolicies are the NetworkPolicies and RBAC the development profile puts around the
// unauthenticated Gateway, in the order they are created.
func DevelopmentPolicies(namespace string) []runtime.Object {
	return []runtime.Object{
		gatewayIngressPolicy(namespace),
		oceEgressPolicy(namespace),
		workspaceRBACRole(),
		workspaceRBACBinding(namespace),
	}
}

func DescribeDevelopmentPolicies(namespace string) []step.Object {
	return kubeobj.Describe(DevelopmentPolicies(namespace), map[string]string{
		"NetworkPolicy " + gatewayIngressPolicyName: "Gateway ingress only from the OCE API/worker, supervisor Pods of OCE-owned tenant namespaces and OCE's Agent Gateways",
		"NetworkPolicy " + oceEgressPolicyName:      "OCE API/worker egress to the Gateway",
		"ClusterRole " + workspaceRBACName:          "workspace Role/RoleBinding management; bind/escalate only on Role " + WorkspaceSandboxRole,
		"ClusterRoleBinding " + workspaceRBACName:   "to ServiceAccount " + namespace + "/" + oceWorkerServiceAccount,
	})
}

// gatewayIngressPolicy admits to the Gateway only the OCE API and worker (same namespace),
// OpenShell supervisor Pods of OCE-owned tenant namespaces, and OCE's dedicated Agent Gateway
// Pods in the namespaces OCE keeps them in: other tenant Pods cannot reach the Gateway even
// though this disposable profile runs it unauthenticated.
func gatewayIngressPolicy(namespace string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayIngressPolicyName, Namespace: namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: gatewayPodLabels()},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{
					{PodSelector: oceControlPlaneClients()},
					{
						NamespaceSelector: &metav1.LabelSelector{
							MatchLabels:      map[string]string{contract.LabelOperatorWorkspace: contract.OperatorWorkspaceValue},
							MatchExpressions: []metav1.LabelSelectorRequirement{{Key: contract.LabelNamespace, Operator: metav1.LabelSelectorOpExists}},
						},
						PodSelector: &metav1.LabelSelector{MatchLabels: supervisorPodLabels()},
					},
					{
						NamespaceSelector: &metav1.LabelSelector{
							MatchExpressions: []metav1.LabelSelectorRequirement{{Key: contract.LabelGatewayNamespace, Operator: metav1.LabelSelectorOpExists}},
						},
						PodSelector: &metav1.LabelSelector{MatchLabels: agentGatewayPodLabels()},
					},
				},
				Ports: gatewayPort(),
			}},
		},
	}
}

// oceEgressPolicy lets the OCE API and worker reach the Gateway Pods.
func oceEgressPolicy(namespace string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: oceEgressPolicyName, Namespace: namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *oceControlPlaneClients(),
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: gatewayPodLabels()}}},
				Ports: gatewayPort(),
			}},
		},
	}
}

// tenantCallbackPolicy is applied by the Sandbox Driver in every tenant namespace (it goes into
// the Installation's networkPolicyResources, without a namespace): only Pods with both the
// OpenShell managed-by and supervisor boundary labels may call the Gateway back.
func tenantCallbackPolicy(gatewayNamespace string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: tenantCallbackPolicyName},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: supervisorPodLabels()},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: gatewayNamespace}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: gatewayPodLabels()},
				}},
				Ports: gatewayPort(),
			}},
		},
	}
}

// workspaceRBACRole lets the OCE worker manage each tenant's workspace Role and RoleBinding;
// bind and escalate are limited to the pinned OpenShell workspace Role, so the worker cannot
// grant itself anything else.
func workspaceRBACRole() *rbacv1.ClusterRole {
	manage := []string{"get", "list", "create", "patch", "delete"}
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: workspaceRBACName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: manage},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, ResourceNames: []string{WorkspaceSandboxRole}, Verbs: []string{"bind", "escalate"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: manage},
		},
	}
}

func workspaceRBACBinding(oceNamespace string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: workspaceRBACName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: workspaceRBACName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: oceWorkerServiceAccount, Namespace: oceNamespace}},
	}
}
