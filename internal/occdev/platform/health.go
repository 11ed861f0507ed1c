package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/step"
)

// HealthCheck are the inputs of CheckGatewayHealth.
type HealthCheck struct {
	// Endpoint is where to dial the Gateway (host:port or URL); empty means a port-forward to
	// a ready Gateway Pod in Namespace.
	Endpoint  string
	Namespace string
	// Timeout bounds the whole check.
	Timeout time.Duration
}

// CheckHealthEndpoint applies the gateway client's own endpoint rule (one definition) to an
// endpoint the user gives the Health check (setting names it), with the plaintext transport the
// check dials. An endpoint with a part that may carry a credential (userinfo, a query string, a
// fragment, percent-encoding) is refused first, and every value is shown redacted, so no message
// ever repeats a token. Empty (a port-forward) passes.
func CheckHealthEndpoint(raw, setting string) (string, error) {
	if raw == "" {
		return "", nil
	}
	if part := contract.CredentialPart(raw); part != "" {
		return "", &option.Error{Option: setting, Value: contract.RedactURL(raw), Rule: "must not carry credentials; it carries " + part,
			Fix: "pass host:port or an http(s) origin without them: the development Gateway is unauthenticated, so occ never sends a credential to it"}
	}
	if err := healthConfig(raw).Validate(); err != nil {
		rule := err.Error()
		var ce *gateway.ConfigError
		if errors.As(err, &ce) {
			rule = ce.Rule
		}
		return "", &option.Error{Option: setting, Value: contract.RedactURL(raw), Rule: rule,
			Fix: "pass host:port or an http(s) origin where the Gateway answers, or leave it unset for a port-forward"}
	}
	return raw, nil
}

// healthConfig is how the Health check dials the development Gateway: in plaintext, which the
// development NetworkPolicies confine.
func healthConfig(endpoint string) gateway.Config {
	return gateway.Config{Endpoint: endpoint, InsecureTransport: gateway.InsecureTransportNetworkPolicy}
}

// CheckGatewayHealth calls the Gateway's Health RPC through the gateway client, on the given
// endpoint or through a port-forward to a ready Gateway Pod. It polls until the Gateway reports
// healthy, because a Gateway can be Ready before it serves.
func CheckGatewayHealth(ctx context.Context, c *kubeobj.Conn, h HealthCheck) error {
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	endpoint := h.Endpoint
	if endpoint == "" {
		addr, stop, err := portForwardGateway(ctx, c, h.Namespace)
		if err != nil {
			return err
		}
		defer stop()
		endpoint = addr
	}
	client, err := gateway.Dial(ctx, healthConfig(endpoint))
	if err != nil {
		return fmt.Errorf("connect to the OpenShell Gateway at %s: %w", endpoint, err)
	}
	defer client.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		health, err := client.Health(ctx)
		if err == nil && health.Healthy() {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("OpenShell Gateway at %s did not answer Health within %s: %w", endpoint, h.Timeout, err)
			}
			return fmt.Errorf("OpenShell Gateway at %s reports status %v (version %s), not healthy, after %s", endpoint, health.Status, health.Version, h.Timeout)
		case <-tick.C:
		}
	}
}

// portForwardGateway forwards a loopback port to the Gateway port of a ready Gateway Pod, the
// way `kubectl port-forward` does, so Health works on any cluster whatever the Service type.
func portForwardGateway(ctx context.Context, c *kubeobj.Conn, namespace string) (string, func(), error) {
	sel := gatewayPodSelector()
	pods, err := c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return "", nil, fmt.Errorf("list Gateway Pods (%s) in %s: %w", sel, namespace, err)
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if kube.PodReady(&pods.Items[i]) {
			pod = &pods.Items[i]
			break
		}
	}
	if pod == nil {
		return "", nil, fmt.Errorf("no ready Gateway Pod (%s) in namespace %s to port-forward to; pass --gateway-endpoint if the Gateway is reachable directly", sel, namespace)
	}
	req := c.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod.Name).SubResource("portforward")
	rt, upgrader, err := spdy.RoundTripperFor(c.Config)
	if err != nil {
		return "", nil, fmt.Errorf("port-forward to Pod %s/%s: %w", namespace, pod.Name, err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, req.URL())
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(GatewayPort)}, stopCh, readyCh, io.Discard, io.Discard)
	if err != nil {
		return "", nil, fmt.Errorf("port-forward to Pod %s/%s: %w", namespace, pod.Name, err)
	}
	errCh := make(chan error, 1)
	go func() { errCh <- fw.ForwardPorts() }()
	stop := func() { close(stopCh) }
	select {
	case <-readyCh:
	case err := <-errCh:
		return "", nil, fmt.Errorf("port-forward to Pod %s/%s: %w", namespace, pod.Name, err)
	case <-ctx.Done():
		stop()
		return "", nil, fmt.Errorf("port-forward to Pod %s/%s: %w", namespace, pod.Name, ctx.Err())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return "", nil, fmt.Errorf("port-forward to Pod %s/%s: no local port", namespace, pod.Name)
	}
	return "127.0.0.1:" + strconv.Itoa(int(ports[0].Local)), stop, nil
}

// gatewayPodSelector selects the Gateway Pods the Health check port-forwards to.
func gatewayPodSelector() string { return labels.SelectorFromSet(gatewayPodLabels()).String() }

// Describe is the dry run's account of CheckGatewayHealth of h: the endpoint it calls, or the
// Gateway Pods (by the labels the port-forward selects them by) it forwards to a ready one of.
func (h HealthCheck) Describe() step.Description {
	if h.Endpoint != "" {
		return step.Note("nothing created; calls Health at " + h.Endpoint).Waiting(step.Wait{Kind: "endpoint", Name: h.Endpoint, Ready: "the Gateway reports healthy to Health"})
	}
	return step.Note("nothing created; calls Health through a port-forward to a Gateway Pod").Waiting(step.Wait{Kind: "Pods", Namespace: h.Namespace,
		Name: gatewayPodSelector(), Ready: "the Gateway of a ready one reports healthy to Health through a port-forward"})
}
