package occdev

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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/state"
)

// workload is a Deployment or StatefulSet `up` waits for.
type workload struct {
	kind, namespace, name string
}

func (w workload) String() string { return fmt.Sprintf("%s %s/%s", w.kind, w.namespace, w.name) }

// workloadsIn lists the Deployments and StatefulSets among objs; objects without a namespace
// belong to defaultNamespace (as Helm installs them).
func workloadsIn(objs []*unstructured.Unstructured, defaultNamespace string) []workload {
	var ws []workload
	for _, u := range objs {
		if u.GetAPIVersion() != "apps/v1" || (u.GetKind() != "Deployment" && u.GetKind() != "StatefulSet") {
			continue
		}
		ns := u.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		ws = append(ws, workload{kind: u.GetKind(), namespace: ns, name: u.GetName()})
	}
	return ws
}

// waitForPlatform waits, by watch, until the Agent Sandbox controller and the Gateway workloads
// report every replica ready. Each wait has the startup timeout and a message that names the
// workload and says what to look at.
func waitForPlatform(ctx context.Context, sc *StepContext) error {
	objs, err := sc.agentSandboxObjects(ctx)
	if err != nil {
		return err
	}
	all := workloadsIn(objs, "default")
	if sc.release == nil {
		return errors.New("the Gateway release is unknown: the install step did not run")
	}
	rendered, err := artifacts.ParseYAML([]byte(sc.release.Manifest), "Gateway release "+GatewayRelease)
	if err != nil {
		return err
	}
	gw := workloadsIn(rendered, sc.Plan.Namespace)
	if len(gw) == 0 {
		return fmt.Errorf("the Gateway chart installed no Deployment or StatefulSet: the pinned chart is not the one occ expects")
	}
	all = append(all, gw...)
	for _, w := range all {
		wctx, cancel := context.WithTimeout(ctx, sc.Plan.StartupTimeout)
		if w.kind == "StatefulSet" {
			err = kube.WaitForStatefulSetReady(wctx, sc.cluster.kube, w.namespace, w.name)
		} else {
			err = kube.WaitForDeploymentReady(wctx, sc.cluster.kube, w.namespace, w.name)
		}
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, kube.ErrWaitTimeout) {
				return fmt.Errorf("%s did not become ready within %s: check its Pods (events, image pulls) in namespace %s, or raise --startup-timeout: %w", w, sc.Plan.StartupTimeout, w.namespace, err)
			}
			return err
		}
	}
	return nil
}

// checkGatewayHealth calls the Gateway's Health RPC through the gateway client, on the
// configured endpoint or through a port-forward to a ready Gateway Pod. It polls until the
// Gateway reports healthy, because a Gateway can be Ready before it serves.
func checkGatewayHealth(ctx context.Context, sc *StepContext) error {
	ctx, cancel := context.WithTimeout(ctx, sc.Plan.StartupTimeout)
	defer cancel()
	endpoint := sc.Plan.GatewayEndpoint
	if endpoint == "" {
		addr, stop, err := portForwardGateway(ctx, sc.cluster, sc.Plan.Namespace)
		if err != nil {
			return err
		}
		defer stop()
		endpoint = addr
	}
	client, err := gateway.Dial(ctx, gateway.Config{Endpoint: endpoint, InsecureTransport: "network-policy"})
	if err != nil {
		return fmt.Errorf("connect to the OpenShell Gateway at %s: %w", endpoint, err)
	}
	defer client.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		h, err := client.Health(ctx)
		if err == nil && h.Healthy() {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("OpenShell Gateway at %s did not answer Health within %s: %w", endpoint, sc.Plan.StartupTimeout, err)
			}
			return fmt.Errorf("OpenShell Gateway at %s reports status %v (version %s), not healthy, after %s", endpoint, h.Status, h.Version, sc.Plan.StartupTimeout)
		case <-tick.C:
		}
	}
}

// portForwardGateway forwards a loopback port to port 8080 of a ready Gateway Pod, the way
// `kubectl port-forward` does, so Health works on any cluster whatever the Service type.
func portForwardGateway(ctx context.Context, c *clusterConn, namespace string) (string, func(), error) {
	sel := labels.SelectorFromSet(gatewayPodLabels()).String()
	pods, err := c.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
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
	req := c.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod.Name).SubResource("portforward")
	rt, upgrader, err := spdy.RoundTripperFor(c.config)
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

// installationEndpoint is the Gateway address OCE uses: the Service's cluster DNS name when the
// control plane runs in the cluster, the node's NodePort when it runs in Compose.
func (sc *StepContext) installationEndpoint(ctx context.Context) (string, error) {
	if sc.Plan.ControlPlane == ControlPlaneKubernetes {
		return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", GatewayServiceName, sc.Plan.Namespace, GatewayPort), nil
	}
	host, err := sc.Plan.provider.NodeAddress(ctx, sc)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://%s:%d", host, sc.Plan.NodePort), nil
}

// writeInstallationStep builds the Installation, validates it with the driver's rules, writes
// it into the state directory and records where it is.
func writeInstallationStep(ctx context.Context, sc *StepContext) error {
	endpoint, err := sc.installationEndpoint(ctx)
	if err != nil {
		return err
	}
	in, err := buildInstallation(installationInput{
		ClusterName:        sc.cluster.access.Name,
		Context:            sc.cluster.access.Context,
		ControlPlane:       sc.Plan.ControlPlane,
		Namespace:          sc.Plan.Namespace,
		GatewayEndpoint:    endpoint,
		GatewayClusterIP:   sc.gatewayClusterIP,
		WorkspaceResources: sc.workspaceResources,
	})
	if err != nil {
		return err
	}
	data, err := encodeInstallation(in)
	if err != nil {
		return err
	}
	path := sc.state.File(InstallationFileName)
	if err := writeInstallation(path, data); err != nil {
		return err
	}
	if err := sc.state.Update(func(s *state.State) { s.InstallationPath = path; s.GatewayEndpoint = endpoint }); err != nil {
		return fmt.Errorf("record the Installation in the state: %w", err)
	}
	sc.installationPath, sc.gatewayEndpoint = path, endpoint
	return nil
}
