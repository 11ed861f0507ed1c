package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/driver/openshell"
	"github.com/openclaw/occ/internal/gateway/emulator"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/testbed"
)

// An engineer provisions the enrolling OpenClaw example through the CLI: a setup Secret owned by
// another Agent is refused before any mutation; once the Agent's own Secret holds the code, the
// Harness is provisioned with the workspace-node-enrollment rule and the runtime provider carries
// the envelope. The bootstrap token reaches nothing but that provider's create request.
func TestSandboxProvisionWorkspaceNodeEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newE2EBed(t)
	const nsID = "ns_cli_node"
	revision := writeRevision(t, "openclaw-node.yaml", func(s string) string {
		return strings.Replace(s, "namespaceId: ns_acme", "namespaceId: "+nsID, 1)
	})
	ns, err := compute.ResolveNamespace(nsID)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := b.occ(t, "ensure-namespace", "--revision", revision); code != 0 {
		t.Fatalf("ensure-namespace: exit %d\n%s", code, errOut)
	}
	fields, err := json.Marshal(map[string]any{
		"url": "wss://agent-gateway.example:8443/node", "bootstrapToken": b.canary.secret,
		"expiresAtMs": time.Now().Add(time.Hour).UnixMilli(), "tlsFingerprint": "sha256:ab",
	})
	if err != nil {
		t.Fatal(err)
	}
	code := "oc-pair://" + base64.RawURLEncoding.EncodeToString(fields)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-researcher-node-setup", Namespace: ns.Name,
			Labels: map[string]string{driver.LabelNamespace: nsID, driver.LabelAgent: "agent_other"}},
		StringData: map[string]string{"setup-code": code},
	}
	if _, err := b.kube.CoreV1().Secrets(ns.Name).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := len(b.gw.Journal().Mutations())
	if code, _, errOut := b.occ(t, "provision", "--revision", revision); code != 1 || !strings.Contains(errOut, "Refusing a workspace node setup Secret without exact Agent ownership.") {
		t.Fatalf("provision with another Agent's Secret: exit %d\n%s", code, errOut)
	}
	if n := len(b.gw.Journal().Mutations()); n != before {
		t.Fatalf("the refused provision made %d mutating RPCs", n-before)
	}

	secret.Labels[driver.LabelAgent] = "agent_researcher"
	if _, err := b.kube.CoreV1().Secrets(ns.Name).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testbed.PlayKubelet(ctx, t, b.kube, ns.Name)
	if code, _, errOut := b.occ(t, "provision", "--revision", revision); code != 0 {
		t.Fatalf("provision: exit %d\n%s", code, errOut)
	}
	creates := b.gw.Journal().Method("CreateSandbox")
	if len(creates) != 1 {
		t.Fatalf("CreateSandbox calls %d", len(creates))
	}
	spec := creates[0].Request.(*pb.CreateSandboxRequest).GetSpec()
	rule := spec.GetPolicy().GetNetworkPolicies()["workspace-node-enrollment"]
	if len(rule.GetEndpoints()) != 1 || rule.GetEndpoints()[0].GetHost() != "agent-gateway.example" || rule.GetBinaries()[0].GetPath() != "/usr/local/bin/node" {
		t.Fatalf("enrollment rule %v", rule)
	}
	provider := openshell.RuntimeProviderName("rev_9e4a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b")
	var sawEnvelope bool
	for _, c := range b.gw.Journal().Method("CreateProvider") {
		p := c.Request.(*pb.CreateProviderRequest).GetProvider()
		if p.GetMetadata().GetName() == provider {
			sawEnvelope = strings.Contains(p.GetConfig()["node_setup_json"], b.canary.secret)
		}
	}
	if !sawEnvelope {
		t.Fatalf("runtime provider %s was not created with the setup envelope", provider)
	}
	b.scan(t, func(c emulator.Call) bool {
		return c.Method == "CreateProvider" && c.Request.(*pb.CreateProviderRequest).GetProvider().GetMetadata().GetName() == provider
	})
}
