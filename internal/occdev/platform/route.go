package platform

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
)

// Route is the private route of dedicated Agent Gateways that OCE's chart renders when its
// gatewayRouting is enabled (templates/gateway-routing.yaml): cert-manager issues the TLS
// certificate of the HTTPS listener of Gateway RoutingGatewayName in the gateway namespace, and
// Envoy Gateway runs that Gateway's proxies, behind Service Service(), in RoutingEnvoyNamespace.
// Its names derive, as the chart derives them, from the Gateway's namespace and name.
type Route struct {
	// Namespace is the Gateway's namespace: the OCE release's.
	Namespace string
}

// hash is the 12-hex digest of "<namespace>/<gateway>" the chart names the route's objects by.
func (r Route) hash() string {
	sum := sha256.Sum256([]byte(r.Namespace + "/" + RoutingGatewayName))
	return hex.EncodeToString(sum[:])[:12]
}

// Service is the Envoy proxies' Service in RoutingEnvoyNamespace.
func (r Route) Service() string { return "occ-gateway-" + r.hash() }

// RootSecret is the Secret of the route's own CA (cert-manager's self-signed root), whose
// tls.crt is the certificate clients of the route trust.
func (r Route) RootSecret() string { return r.Service() + "-root" }

// Certificate is the listener's TLS Certificate (and its Secret).
func (r Route) Certificate() string { return RoutingGatewayName + "-tls" }

// ProxyLabels select the Envoy proxy Pods Envoy Gateway runs for the route's Gateway.
func (r Route) ProxyLabels() map[string]string {
	return map[string]string{
		contract.LabelComponent:                          "proxy",
		contract.LabelManagedBy:                          "envoy-gateway",
		"gateway.envoyproxy.io/owning-gateway-namespace": r.Namespace,
		"gateway.envoyproxy.io/owning-gateway-name":      RoutingGatewayName,
	}
}

var (
	certificatesGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	gatewaysGVR     = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
)

// WaitRoute waits, within timeout, until cert-manager has issued the listener's Certificate
// (Ready), Envoy Gateway has programmed the Gateway (Programmed) and every one of its proxy Pods
// is Ready at an address inside podCIDRs (the node's Pod ranges the Installation trusts). It
// returns the proxies' addresses as sorted /32 prefixes. The error names the object that did not
// get there, what it last showed, and whose logs say why.
func WaitRoute(ctx context.Context, c *kubeobj.Conn, r Route, podCIDRs []string, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	left := func() time.Duration { return max(time.Until(deadline), time.Millisecond) }
	if err := waitCondition(ctx, c, certificatesGVR, "Certificate", r.Namespace, r.Certificate(), "Ready", left(), timeout,
		fmt.Sprintf("check the cert-manager Pods' logs in namespace %s and the Certificate's events (kubectl -n %s describe certificate %s)", RoutingCertManagerNS, r.Namespace, r.Certificate())); err != nil {
		return nil, err
	}
	if err := waitCondition(ctx, c, gatewaysGVR, "Gateway", r.Namespace, RoutingGatewayName, "Programmed", left(), timeout,
		fmt.Sprintf("check the envoy-gateway Pod's logs in namespace %s and the Gateway's status (kubectl -n %s describe gateway %s)", RoutingEnvoyNamespace, r.Namespace, RoutingGatewayName)); err != nil {
		return nil, err
	}
	var ranges []netip.Prefix
	for _, s := range podCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("the node's Pod range %q: %w", s, err)
		}
		ranges = append(ranges, p)
	}
	selector := labels.SelectorFromSet(r.ProxyLabels()).String()
	var ips []string
	last := "no proxy Pod yet"
	err := pollUntil(ctx, time.Now().Add(left()), func(ctx context.Context) (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(RoutingEnvoyNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		ips = ips[:0]
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			if !podReady(p) {
				last = "Pod " + p.Name + " is not Ready (" + string(p.Status.Phase) + ")"
				return false, nil
			}
			addr, err := netip.ParseAddr(p.Status.PodIP)
			if err != nil || !addr.Is4() {
				last = fmt.Sprintf("Pod %s has no IPv4 address (%q)", p.Name, p.Status.PodIP)
				return false, nil
			}
			if !slices.ContainsFunc(ranges, func(pr netip.Prefix) bool { return pr.Contains(addr) }) {
				return false, fmt.Errorf("Envoy proxy Pod %s/%s has address %s, outside the node's Pod ranges %s that the Installation trusts as proxies: the route's proxies must run on the cluster's Pod network", RoutingEnvoyNamespace, p.Name, addr, strings.Join(podCIDRs, ", "))
			}
			ips = append(ips, netip.PrefixFrom(addr, 32).String())
		}
		if len(ips) == 0 {
			last = "no proxy Pod yet"
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if errors.Is(err, errPollDeadline) {
			return nil, fmt.Errorf("the Envoy proxies of Gateway %s/%s (Pods -l %s in namespace %s) were not Ready within %s (last seen: %s): check the envoy-gateway Pod's logs in namespace %s, or raise --startup-timeout", r.Namespace, RoutingGatewayName, selector, RoutingEnvoyNamespace, timeout, last, RoutingEnvoyNamespace)
		}
		return nil, err
	}
	slices.Sort(ips)
	return slices.Compact(ips), nil
}

// errPollDeadline ends a pollUntil whose deadline passed.
var errPollDeadline = errors.New("deadline passed")

// pollUntil polls cond every 200 ms, from now, until it is done, fails, ctx ends, or deadline
// passes (errPollDeadline). The requests cond makes carry no deadline of the poll's own: a
// client's rate limiter refuses a request that a context's deadline would cut, which would end
// the wait with that refusal instead of its own message.
func pollUntil(ctx context.Context, deadline time.Time, cond func(context.Context) (bool, error)) error {
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if done, err := cond(ctx); done || err != nil {
			return done, err
		}
		if time.Now().After(deadline) {
			return false, errPollDeadline
		}
		return false, nil
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitCondition waits until the object's condition cond is True for its current generation,
// polling within timeout; fix says where to look when it is not.
// The poll ends after budget (what is left of a wait of timeout, the figure the error names).
func waitCondition(ctx context.Context, c *kubeobj.Conn, gvr schema.GroupVersionResource, kind, namespace, name, cond string, budget, timeout time.Duration, fix string) error {
	ri := c.Dynamic().Resource(gvr)
	last := "not created yet"
	err := pollUntil(ctx, time.Now().Add(budget), func(ctx context.Context) (bool, error) {
		var u *unstructured.Unstructured
		var err error
		if namespace == "" {
			u, err = ri.Get(ctx, name, metav1.GetOptions{})
		} else {
			u, err = ri.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		last = "no " + cond + " condition yet"
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, raw := range conds {
			m, _ := raw.(map[string]any)
			if m["type"] != cond {
				continue
			}
			gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
			last = fmt.Sprintf("%s %v (%v: %v)", cond, m["status"], m["reason"], m["message"])
			return m["status"] == "True" && (gen == 0 || gen == u.GetGeneration()), nil
		}
		return false, nil
	})
	if errors.Is(err, errPollDeadline) {
		where := name
		if namespace != "" {
			where = namespace + "/" + name
		}
		return fmt.Errorf("%s %s was not %s within %s (last seen: %s): %s, or raise --startup-timeout", kind, where, cond, timeout, last, fix)
	}
	return err
}

// RouteNodePort is the node port of the route's HTTPS listener (port 443 of its Envoy Service),
// where a client outside the cluster reaches it on the node (the Service must be a NodePort).
func RouteNodePort(ctx context.Context, c *kubeobj.Conn, r Route) (int, error) {
	svc, err := c.Kube.CoreV1().Services(RoutingEnvoyNamespace).Get(ctx, r.Service(), metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("read the route's Envoy Service %s/%s: %w", RoutingEnvoyNamespace, r.Service(), err)
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == 443 && p.NodePort > 0 {
			return int(p.NodePort), nil
		}
	}
	return 0, fmt.Errorf("the route's Envoy Service %s/%s (type %s) has no node port for its HTTPS port 443: the chart's gatewayRouting.serviceType must be NodePort for clients outside the cluster", RoutingEnvoyNamespace, r.Service(), svc.Spec.Type)
}

// RouteCA is the public certificate of the route's CA (tls.crt of its root Secret), which
// clients of the route trust. Only certificates leave the Secret: a private key, or anything
// that is not a PEM certificate, is refused.
func RouteCA(ctx context.Context, c *kubeobj.Conn, r Route) ([]byte, error) {
	s, err := c.Kube.CoreV1().Secrets(r.Namespace).Get(ctx, r.RootSecret(), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the route's CA Secret %s/%s: %w", r.Namespace, r.RootSecret(), err)
	}
	data := s.Data[corev1.TLSCertKey]
	if err := checkCertificates(data); err != nil {
		return nil, fmt.Errorf("the route's CA Secret %s/%s key %s: %w", r.Namespace, r.RootSecret(), corev1.TLSCertKey, err)
	}
	return data, nil
}

// checkCertificates accepts PEM data of one or more certificates and nothing else.
func checkCertificates(data []byte) error {
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if strings.TrimSpace(string(rest)) != "" {
				return fmt.Errorf("holds data that is not PEM")
			}
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a PEM block of type %q: only certificates are copied out of the cluster", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("holds a certificate that does not parse: %w", err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("holds no certificate (cert-manager has not issued the CA yet)")
	}
	return nil
}

// NodePodCIDRs are the nodes' Pod ranges, each a canonical IPv4 prefix no wider than /16: the
// addresses Agent Gateways trust as proxies must not reach beyond the cluster's Pods.
func NodePodCIDRs(nodes []corev1.Node) ([]string, error) {
	var out []string
	for _, n := range nodes {
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			prefix, err := netip.ParsePrefix(c)
			if err != nil || !prefix.Addr().Is4() {
				continue // an IPv6 range of a dual-stack node: Envoy's proxies are reached over IPv4
			}
			if prefix.Bits() < 16 || prefix != prefix.Masked() {
				return nil, fmt.Errorf("node %s has Pod CIDR %s: the routing's trusted proxy range must be a canonical IPv4 prefix of /16 or narrower; the cluster's Pod ranges are too wide to trust", n.Name, c)
			}
			if !slices.Contains(out, prefix.String()) {
				out = append(out, prefix.String())
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no node of the cluster has an IPv4 Pod CIDR (spec.podCIDR): the routing's trusted proxy range cannot be chosen; a k3s node always has one, so the cluster is not ready")
	}
	slices.Sort(out)
	return out, nil
}
