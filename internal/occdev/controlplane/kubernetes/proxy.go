package kubernetes

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// relayScript is a TCP relay from the proxy's port to the OCE API Service, in the Node runtime
// the controller image already has: the API's ingress policy admits the proxy's labels only, so
// host traffic (k3d load balancer → NodePort → proxy) reaches the API through it and nothing
// else in the cluster can.
var relayScript = fmt.Sprintf(`const net = require("node:net");
net.createServer((client) => {
  const upstream = net.connect(%d, %q);
  client.pipe(upstream); upstream.pipe(client);
  client.on("error", () => upstream.destroy()); upstream.on("error", () => client.destroy());
}).listen(%d, "0.0.0.0");`, APIPort, APIService, ProxyPort)

// ProxyDeploymentObject is the development API proxy, labelled as the chart's only admitted client.
func ProxyDeploymentObject(namespace string, own Ownership, controllerImage string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: ProxyDeployment, Namespace: namespace, Labels: own.with(ProxyPodLabels())},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: ProxyPodLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: own.with(ProxyPodLabels())},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						RunAsUser:      ptr(int64(ControllerUID)),
						RunAsGroup:     ptr(int64(ControllerUID)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "proxy",
						Image:           controllerImage,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{"node", "-e", relayScript},
						Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: ProxyPort, Protocol: corev1.ProtocolTCP}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
							PeriodSeconds: 2,
						},
						Resources: resources("25m", "32Mi", "250m", "128Mi"),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr(false),
							ReadOnlyRootFilesystem:   ptr(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// ProxyServiceObject publishes the proxy on NodePort 30080, which k3d maps to the host's
// loopback API port (--port 127.0.0.1:<port>:30080@loadbalancer).
func ProxyServiceObject(namespace string, own Ownership) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ProxyService, Namespace: namespace, Labels: own.with(nil)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: ProxyPodLabels(),
			Ports: []corev1.ServicePort{{
				Name: "http", Port: ProxyPort, TargetPort: intstr.FromString("http"), NodePort: ProxyNodePort, Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}
