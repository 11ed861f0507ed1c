package main

import (
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// k3d starts a server with `server --tls-san HOST` plus whatever the provider passes through
// --k3s-arg; the stand-in must read them as k3s does.
func TestServerFlagsAsK3dPassesThem(t *testing.T) {
	t.Setenv("K3S_KUBECONFIG_OUTPUT", "/output/kubeconfig.yaml")
	t.Setenv("K3S_URL", "")
	c, err := parseServerFlags([]string{
		"--tls-san", "127.0.0.1", "--tls-san=k3d-x-serverlb",
		"--kubelet-arg=image-gc-high-threshold=100", "--kubelet-arg", "eviction-hard=nodefs.available<1%",
		"--disable=traefik,servicelb", "--disable", "coredns",
		"--kube-apiserver-arg=admission-control-config-file=/etc/psa.yaml",
		"--cluster-init", "--node-name", "n1", "--node-label=a=b",
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.tlsSANs, ",") != "127.0.0.1,k3d-x-serverlb" {
		t.Errorf("tls-san = %v", c.tlsSANs)
	}
	if len(c.kubeletArgs) != 2 || c.kubeletArgs[1] != "eviction-hard=nodefs.available<1%" {
		t.Errorf("kubelet args = %v", c.kubeletArgs)
	}
	if !c.disable["traefik"] || !c.disable["servicelb"] || !c.disable["coredns"] || c.disable["local-storage"] {
		t.Errorf("disable = %v", c.disable)
	}
	if !c.clusterInit || c.nodeName != "n1" || c.writeKubeconfig != "/output/kubeconfig.yaml" {
		t.Errorf("cluster-init %t, node %q, kubeconfig %q", c.clusterInit, c.nodeName, c.writeKubeconfig)
	}
	args := componentArgs(map[string]string{"admission-control-config-file": "", "secure-port": "6443"}, c.apiserverArgs)
	if strings.Join(args, " ") != "--admission-control-config-file=/etc/psa.yaml --secure-port=6443" {
		t.Errorf("apiserver args = %v", args)
	}
}

// A provider passing a flag the stand-in cannot honour gets told which one, instead of a node
// that silently ignores it.
func TestServerFlagsRefuseWhatTheStandinCannotDo(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--flannel-iface=eth1"}, "", "flag --flannel-iface=eth1 is not supported by the k3s stand-in"},
		{[]string{"--snapshotter=overlayfs"}, "", "native snapshotter only"},
		{[]string{"--tls-san"}, "", "flag --tls-san needs a value"},
		{[]string{"agent"}, "", `unexpected argument "agent"`},
		{nil, "https://k3d-x-server-0:6443", "joining another server is not supported"},
	} {
		t.Setenv("K3S_URL", c.env)
		_, err := parseServerFlags(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseServerFlags(%q) error %v, want it to say %q", c.args, err, c.want)
		}
	}
}

// The CRI matches image references in one canonical spelling; so does the played kubelet.
func TestImageNamesCompareAsTheCRIDoes(t *testing.T) {
	same := [][2]string{
		{"busybox", "docker.io/library/busybox:latest"},
		{"occ-bed/x:1", "docker.io/occ-bed/x:1"},
		{"127.0.0.1:5000/r@sha256:" + strings.Repeat("a", 64), "127.0.0.1:5000/r@sha256:" + strings.Repeat("a", 64)},
	}
	for _, p := range same {
		if normalizeImage(p[0]) != normalizeImage(p[1]) {
			t.Errorf("%s and %s should name the same image: %s vs %s", p[0], p[1], normalizeImage(p[0]), normalizeImage(p[1]))
		}
	}
	if normalizeImage("r:1") == normalizeImage("r:2") || normalizeImage("a/r:1") == normalizeImage("b/r:1") {
		t.Error("different references normalised to the same name")
	}
}

// An import lands in the node (occ tags the verified image for the chart): the played kubelet
// picks the event out of ctr's stream, and ignores other namespaces' images and other topics.
func TestImageEventsOfTheCRINamespace(t *testing.T) {
	ts := "2025-06-01 10:00:00.123456789 +0000 UTC"
	for line, want := range map[string]bool{
		ts + ` k8s.io /images/create {"name":"registry.k8s.io/x@sha256:` + strings.Repeat("a", 64) + `"}`: true,
		ts + ` k8s.io /images/update {"name":"occ.local/import/x:c"}`:                                     true,
		ts + ` k8s.io /images/delete {"name":"occ.local/import/x:c"}`:                                     true,
		ts + ` moby /images/create {"name":"k8s.io"}`:                                                     false,
		ts + ` k8s.io /content/create {"digest":"sha256:` + strings.Repeat("b", 64) + `"}`:                false,
		ts + ` default /snapshot/prepare {"key":"k8s.io"}`:                                                false,
		"": false,
	} {
		if got := criImageEvent(line); got != want {
			t.Errorf("criImageEvent(%q) = %v, want %v", line, got, want)
		}
	}
}

// What the played kubelet reports, per the images present in the node's containerd.
func TestPlayedPodStatus(t *testing.T) {
	k := newKubelet(nil, &serverConfig{nodeName: "n1"}, net.ParseIP("172.18.0.2"), certFiles{}, "")
	// Pod IPs come from the node's Pod CIDR, which needs the API; give the Pods one already.
	pod := func(policy corev1.RestartPolicy, pull corev1.PullPolicy, image string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
			Spec: corev1.PodSpec{
				NodeName: "n1", RestartPolicy: policy,
				InitContainers: []corev1.Container{{Name: "init", Image: "present:1", ImagePullPolicy: corev1.PullNever}},
				Containers:     []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: pull}},
			},
			Status: corev1.PodStatus{PodIP: "10.42.0.7", Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
		}
	}
	present := map[string]bool{normalizeImage("present:1"): true}
	cond := func(s *corev1.PodStatus, t corev1.PodConditionType) corev1.ConditionStatus {
		for _, c := range s.Conditions {
			if c.Type == t {
				return c.Status
			}
		}
		return ""
	}

	s := k.desiredStatus(pod(corev1.RestartPolicyAlways, corev1.PullNever, "present:1"), present)
	if s.Phase != corev1.PodRunning || cond(s, corev1.PodReady) != corev1.ConditionTrue || !s.ContainerStatuses[0].Ready ||
		s.InitContainerStatuses[0].State.Terminated == nil || s.PodIP != "10.42.0.7" || s.HostIP != "172.18.0.2" {
		t.Errorf("present image, restart Always: %+v", s)
	}
	if cond(s, corev1.PodScheduled) != corev1.ConditionTrue {
		t.Error("the scheduler's PodScheduled condition was dropped")
	}

	s = k.desiredStatus(pod(corev1.RestartPolicyNever, corev1.PullIfNotPresent, "present:1"), present)
	if s.Phase != corev1.PodSucceeded || cond(s, corev1.PodReady) != corev1.ConditionFalse || s.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("present image, restart Never (a Job's Pod): %+v", s)
	}

	s = k.desiredStatus(pod(corev1.RestartPolicyAlways, corev1.PullNever, "absent:1"), present)
	if w := s.ContainerStatuses[0].State.Waiting; s.Phase != corev1.PodPending || w == nil || w.Reason != "ErrImageNeverPull" ||
		w.Message != `Container image "absent:1" is not present with pull policy of Never` || cond(s, corev1.PodReady) != corev1.ConditionFalse {
		t.Errorf("absent image, pull Never: %+v", s)
	}

	s = k.desiredStatus(pod(corev1.RestartPolicyAlways, corev1.PullIfNotPresent, "absent:1"), present)
	if w := s.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ErrImagePull" {
		t.Errorf("absent image, pull IfNotPresent: %+v", s)
	}
}

// Clients reach the apiserver by loopback (k3d's kubeconfig), by the node's name on the Docker
// network (a container kubeconfig), by the load balancer's name and by the in-cluster service;
// every one of them must be in the serving certificate.
func TestServingCertificateNames(t *testing.T) {
	c := &serverConfig{nodeName: "k3d-x-server-0", serviceCIDR: "10.43.0.0/16", clusterDomain: "cluster.local",
		tlsSANs: []string{"127.0.0.1", "k3d-x-serverlb", "0.0.0.0"}}
	dns, ips, err := servingNames(c, net.ParseIP("172.18.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"k3d-x-server-0", "k3d-x-serverlb", "kubernetes.default.svc.cluster.local", "localhost"} {
		if !contains(dns, want) {
			t.Errorf("DNS SANs %v lack %s", dns, want)
		}
	}
	var got []string
	for _, ip := range ips {
		got = append(got, ip.String())
	}
	for _, want := range []string{"127.0.0.1", "172.18.0.2", "10.43.0.1"} {
		if !contains(got, want) {
			t.Errorf("IP SANs %v lack %s", got, want)
		}
	}
	if contains(got, "0.0.0.0") {
		t.Errorf("IP SANs %v include the unspecified address k3d passes as its default API host", got)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
