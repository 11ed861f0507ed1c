package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// kubelet PLAYS the kubelet of the node: it registers the Node and keeps it Ready (Lease and
// status heartbeats, so the real node-lifecycle controller leaves it alone), and it writes the
// status a kubelet would write for the Pods the real scheduler binds here. No container ever
// runs: a Pod whose images are all present in the node's containerd (namespace k8s.io) is
// reported Running and Ready, or Succeeded when its restartPolicy is not Always (a Job's Pods);
// a Pod with an absent image waits with ErrImageNeverPull (pullPolicy Never) or ErrImagePull
// (the node cannot reach a registry), and is picked up once the image is imported.
type kubelet struct {
	client kubernetes.Interface
	cfg    *serverConfig
	nodeIP net.IP

	images *imageCache
	// serving and clientCA are the TLS material of the log endpoint (podlogs.go).
	serving  certFiles
	clientCA string

	mu     sync.Mutex
	podIPs map[types.UID]string
	usedIP map[string]bool
}

func newKubelet(client kubernetes.Interface, cfg *serverConfig, nodeIP net.IP, serving certFiles, clientCA string) *kubelet {
	return &kubelet{
		client: client, cfg: cfg, nodeIP: nodeIP, serving: serving, clientCA: clientCA,
		images: &imageCache{},
		podIPs: map[types.UID]string{}, usedIP: map[string]bool{},
	}
}

// register creates (or, after a container restart, updates) the Node and reports it Ready.
func (k *kubelet) register(ctx context.Context) error {
	nodes := k.client.CoreV1().Nodes()
	want, err := k.nodeObject()
	if err != nil {
		return err
	}
	node, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, want.Name, metav1.GetOptions{})
		if err == nil {
			for k, v := range want.Labels {
				node.Labels[k] = v
			}
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			for k, v := range want.Annotations {
				node.Annotations[k] = v
			}
			node, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", want.Name, err)
	}
	if err := k.updateNodeStatus(ctx, node); err != nil {
		return err
	}
	if err := k.renewLease(ctx, node); err != nil {
		return err
	}
	logf("info", "Successfully registered node %s (played kubelet, InternalIP %s)", node.Name, k.nodeIP)
	return nil
}

func (k *kubelet) nodeObject() (*corev1.Node, error) {
	args, err := json.Marshal(k.cfg.raw)
	if err != nil {
		return nil, err
	}
	nodeLabels := map[string]string{
		"kubernetes.io/hostname":                k.cfg.nodeName,
		"kubernetes.io/os":                      "linux",
		"kubernetes.io/arch":                    runtime.GOARCH,
		"beta.kubernetes.io/os":                 "linux",
		"beta.kubernetes.io/arch":               runtime.GOARCH,
		"node.kubernetes.io/instance-type":      "k3s",
		"beta.kubernetes.io/instance-type":      "k3s",
		"node-role.kubernetes.io/control-plane": "true",
		"node-role.kubernetes.io/master":        "true",
	}
	if k.cfg.clusterInit {
		nodeLabels["node-role.kubernetes.io/etcd"] = "true"
	}
	for _, l := range k.cfg.nodeLabels {
		key, v, _ := strings.Cut(l, "=")
		nodeLabels[key] = v
	}
	var taints []corev1.Taint
	for _, t := range k.cfg.nodeTaints {
		kv, effect, ok := strings.Cut(t, ":")
		if !ok {
			return nil, fmt.Errorf("flag --node-taint=%s: want key[=value]:Effect", t)
		}
		key, v, _ := strings.Cut(kv, "=")
		taints = append(taints, corev1.Taint{Key: key, Value: v, Effect: corev1.TaintEffect(effect)})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   k.cfg.nodeName,
			Labels: nodeLabels,
			// k3s records its arguments on the Node; tests read the kubelet arguments here.
			Annotations: map[string]string{
				"k3s.io/node-args":   string(args),
				"k3s.io/internal-ip": k.nodeIP.String(),
				"occ.test/stand-in":  "played kubelet: no container runs",
			},
		},
		Spec: corev1.NodeSpec{Taints: taints},
	}, nil
}

func (k *kubelet) updateNodeStatus(ctx context.Context, node *corev1.Node) error {
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memTotal(), resource.BinarySI),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(diskTotal(k.cfg.dataDir), resource.BinarySI),
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, old := range node.Status.Conditions {
			if old.Type == t && old.Status == s {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	var uname syscall.Utsname
	_ = syscall.Uname(&uname)
	node.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status (played by the occ test-bed stand-in)"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.nodeIP.String()},
			{Type: corev1.NodeHostName, Address: k.cfg.nodeName},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          version,
			ContainerRuntimeVersion: "containerd://2.1.4",
			OperatingSystem:         "linux",
			Architecture:            runtime.GOARCH,
			OSImage:                 "occ k3s stand-in",
			KernelVersion:           utsString(uname.Release[:]),
			MachineID:               machineID(k.cfg.nodeName),
			SystemUUID:              machineID(k.cfg.nodeName),
			BootID:                  machineID(k.cfg.nodeName + "/boot"),
		},
	}
	if _, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update node %s status: %w", node.Name, err)
	}
	return nil
}

// renewLease keeps the node's heartbeat Lease fresh, as the kubelet does every 10 s.
func (k *kubelet) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: node.Name, Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	lease.Spec.HolderIdentity = ptr.To(node.Name)
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// run serves the node until ctx ends: heartbeats, and a status for every Pod bound here.
func (k *kubelet) run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(k.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.nodeName).String()
	}))
	podInformer := factory.Core().V1().Pods()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	lister := podInformer.Lister()
	go func() {
		if err := serveLogs(ctx, k.client, lister, k.serving, k.clientCA); err != nil {
			logf("warning", "played kubelet: the log endpoint stopped: %v", err)
		}
	}()

	go func() {
		for {
			key, quit := queue.Get()
			if quit {
				return
			}
			if err := k.syncPod(ctx, lister, key); err != nil && ctx.Err() == nil {
				logf("warning", "played kubelet: sync pod %s: %v", key, err)
				queue.AddRateLimited(key)
			} else {
				queue.Forget(key)
			}
			queue.Done(key)
		}
	}()

	lease := time.NewTicker(10 * time.Second)
	status := time.NewTicker(time.Minute)
	// A waiting Pod is retried once its image is imported, as a kubelet's periodic sync does.
	retry := time.NewTicker(2 * time.Second)
	defer lease.Stop()
	defer status.Stop()
	defer retry.Stop()
	// An import is also noticed as it lands, the way a kubelet's own pull ends the wait of the
	// Pod that asked for it: on a real node an image occ does not import (the Agent Sandbox
	// controller's) is pulled by the kubelet and its Pod starts when the pull completes, and on
	// this node an import stands in for that pull.
	landed := make(chan struct{}, 1)
	go k.watchImages(ctx, landed)
	retryWaiting := func() {
		pods, _ := lister.List(labels.Everything())
		for _, p := range pods {
			if waitingOnImage(p) {
				k.images.invalidate()
				queue.Add(p.Namespace + "/" + p.Name)
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-lease.C:
			if node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.nodeName, metav1.GetOptions{}); err == nil {
				if err := k.renewLease(ctx, node); err != nil {
					logf("warning", "played kubelet: renew lease: %v", err)
				}
			}
		case <-status.C:
			if node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.nodeName, metav1.GetOptions{}); err == nil {
				if err := k.updateNodeStatus(ctx, node); err != nil {
					logf("warning", "played kubelet: %v", err)
				}
			}
		case <-retry.C:
			retryWaiting()
		case <-landed:
			retryWaiting()
		}
	}
}

// watchImages follows the node's containerd events through the real ctr; on each image event
// of the CRI namespace it drops the cached image listing and signals landed (without blocking:
// one pending signal covers any number of events). A stream that ends (containerd restarting) is opened again until ctx ends;
// the periodic retry covers the gap.
func (k *kubelet) watchImages(ctx context.Context, landed chan<- struct{}) {
	for ctx.Err() == nil {
		cmd := exec.CommandContext(ctx, "/bin/ctr", "--address", containerdSocket, "events")
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			logf("warning", "played kubelet: follow containerd events: %v", err)
		} else {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if criImageEvent(sc.Text()) {
					// The listing in the cache is stale from this moment, whether a Pod waits
					// now or is created a moment later.
					k.images.invalidate()
					select {
					case landed <- struct{}{}:
					default:
					}
				}
			}
			_ = cmd.Wait()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// criImageEvent reports whether a line of `ctr events` (timestamp, namespace, topic, payload)
// is about an image of the CRI namespace: created, updated (a tag moved) or deleted.
func criImageEvent(line string) bool {
	f := strings.Fields(line)
	for i := 1; i < len(f); i++ {
		// The topic is the first field that starts with a slash; the namespace precedes it.
		if strings.HasPrefix(f[i], "/") {
			return f[i-1] == "k8s.io" && strings.HasPrefix(f[i], "/images/")
		}
	}
	return false
}

func (k *kubelet) syncPod(ctx context.Context, lister listerscorev1.PodLister, key string) error {
	ns, podName, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pod, err := lister.Pods(ns).Get(podName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil {
		// The kubelet finishes a graceful deletion once the containers are gone; there are none.
		err := k.client.CoreV1().Pods(ns).Delete(ctx, podName, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			err = nil
		}
		if err == nil {
			removePodLogs(podLogRoot, pod.Namespace, pod.Name, string(pod.UID))
		}
		k.releaseIP(pod.UID)
		return err
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	names, err := k.images.names()
	if err != nil {
		return err
	}
	status := k.desiredStatus(pod, names)
	writeStartLines(podLogRoot, pod, status)
	if apiequality.Semantic.DeepEqual(withoutTimes(pod.Status), withoutTimes(*status)) {
		return nil
	}
	updated := pod.DeepCopy()
	updated.Status = *status
	_, err = k.client.CoreV1().Pods(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // a newer version is on its way through the informer
	}
	return err
}

// desiredStatus is the status a kubelet would report for pod, given the images present.
func (k *kubelet) desiredStatus(pod *corev1.Pod, present map[string]bool) *corev1.PodStatus {
	now := metav1.Now()
	s := pod.Status.DeepCopy()
	if s.StartTime == nil {
		s.StartTime = &now
	}
	s.HostIP = k.nodeIP.String()
	s.HostIPs = []corev1.HostIP{{IP: s.HostIP}}
	podIP := k.nodeIP.String()
	if !pod.Spec.HostNetwork {
		podIP = k.allocateIP(pod)
	}
	s.PodIP = podIP
	s.PodIPs = []corev1.PodIP{{IP: podIP}}

	missing := map[string]string{} // container name → waiting reason
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if present[normalizeImage(c.Image)] {
			continue
		}
		if c.ImagePullPolicy == corev1.PullNever {
			missing[c.Name] = "ErrImageNeverPull"
		} else {
			missing[c.Name] = "ErrImagePull"
		}
	}
	completes := pod.Spec.RestartPolicy != corev1.RestartPolicyAlways

	containerID := func(c string) string {
		h := sha256.Sum256([]byte(string(pod.UID) + "/" + c))
		return "containerd://" + hex.EncodeToString(h[:])
	}
	status := func(c corev1.Container, init bool) corev1.ContainerStatus {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image}
		prev := findStatus(pod.Status.ContainerStatuses, c.Name)
		if init {
			prev = findStatus(pod.Status.InitContainerStatuses, c.Name)
		}
		startedAt := now
		if prev != nil && prev.State.Running != nil {
			startedAt = prev.State.Running.StartedAt
		}
		switch reason, waiting := missing[c.Name]; {
		case waiting && reason == "ErrImageNeverPull":
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)}
			cs.ImageID = ""
		case waiting:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: fmt.Sprintf("the occ test-bed node cannot pull %q (no registry is reachable from it): import the image into the cluster", c.Image)}
			cs.ImageID = ""
		case len(missing) > 0:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
		case init || completes:
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: startedAt, FinishedAt: now, ContainerID: containerID(c.Name)}
			cs.ContainerID = containerID(c.Name)
		default:
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: startedAt}
			cs.ContainerID = containerID(c.Name)
			cs.Ready, cs.Started = true, ptr.To(true)
		}
		return cs
	}
	s.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		s.InitContainerStatuses = append(s.InitContainerStatuses, status(c, true))
	}
	s.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, status(c, false))
	}

	initialized, readyCond := corev1.ConditionTrue, corev1.ConditionFalse
	readyReason := "ContainersNotReady"
	switch {
	case len(missing) > 0:
		s.Phase = corev1.PodPending
		if len(pod.Spec.InitContainers) > 0 {
			initialized = corev1.ConditionFalse
		}
	case completes:
		s.Phase = corev1.PodSucceeded
		readyReason = "PodCompleted"
	default:
		s.Phase = corev1.PodRunning
		readyCond, readyReason = corev1.ConditionTrue, ""
	}
	setCondition(s, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", now)
	setCondition(s, corev1.PodInitialized, initialized, "", now)
	setCondition(s, corev1.ContainersReady, readyCond, readyReason, now)
	setCondition(s, corev1.PodReady, readyCond, readyReason, now)
	return s
}

func setCondition(s *corev1.PodStatus, t corev1.PodConditionType, status corev1.ConditionStatus, reason string, now metav1.Time) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			if s.Conditions[i].Status != status {
				s.Conditions[i].LastTransitionTime = now
			}
			s.Conditions[i].Status, s.Conditions[i].Reason = status, reason
			return
		}
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: now})
}

func findStatus(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// withoutTimes drops the timestamps a recomputed status always changes, so that an unchanged
// Pod is not rewritten on every event.
func withoutTimes(s corev1.PodStatus) corev1.PodStatus {
	c := s.DeepCopy()
	for i := range c.Conditions {
		c.Conditions[i].LastTransitionTime = metav1.Time{}
		c.Conditions[i].LastProbeTime = metav1.Time{}
	}
	for _, list := range [][]corev1.ContainerStatus{c.ContainerStatuses, c.InitContainerStatuses} {
		for i := range list {
			if t := list[i].State.Terminated; t != nil {
				t.StartedAt, t.FinishedAt = metav1.Time{}, metav1.Time{}
			}
		}
	}
	return *c
}

func waitingOnImage(p *corev1.Pod) bool {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImageNeverPull" || w.Reason == "ErrImagePull") {
				return true
			}
		}
	}
	return false
}

// allocateIP gives a Pod an address from the node's Pod CIDR (set by the real node-IPAM
// controller), stable for the Pod's lifetime.
func (k *kubelet) allocateIP(pod *corev1.Pod) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ip, ok := k.podIPs[pod.UID]; ok {
		return ip
	}
	if ip := pod.Status.PodIP; ip != "" && ip != k.nodeIP.String() {
		k.podIPs[pod.UID], k.usedIP[ip] = ip, true
		return ip
	}
	base := net.ParseIP("10.42.0.0").To4()
	if node, err := k.client.CoreV1().Nodes().Get(context.Background(), k.cfg.nodeName, metav1.GetOptions{}); err == nil && node.Spec.PodCIDR != "" {
		if _, n, err := net.ParseCIDR(node.Spec.PodCIDR); err == nil && n.IP.To4() != nil {
			base = n.IP.To4()
		}
	}
	start := binary.BigEndian.Uint32(base)
	for i := uint32(2); i < 254; i++ {
		b := make(net.IP, 4)
		binary.BigEndian.PutUint32(b, start+i)
		if ip := b.String(); !k.usedIP[ip] {
			k.podIPs[pod.UID], k.usedIP[ip] = ip, true
			return ip
		}
	}
	return k.nodeIP.String()
}

func (k *kubelet) releaseIP(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ip, ok := k.podIPs[uid]; ok {
		delete(k.usedIP, ip)
		delete(k.podIPs, uid)
	}
}

// imageCache lists the image names in the node's containerd (namespace k8s.io), through the
// real ctr, and remembers the answer briefly so a burst of Pod events costs one listing.
type imageCache struct {
	mu   sync.Mutex
	at   time.Time
	list map[string]bool
}

func (c *imageCache) invalidate() {
	c.mu.Lock()
	c.at = time.Time{}
	c.mu.Unlock()
}

func (c *imageCache) names() (map[string]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) < time.Second {
		return c.list, nil
	}
	cmd := exec.Command("/bin/ctr", "--address", containerdSocket, "--namespace", "k8s.io", "images", "ls", "-q")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list images in containerd: %w", err)
	}
	list := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if n := strings.TrimSpace(sc.Text()); n != "" {
			list[normalizeImage(n)] = true
		}
	}
	c.list, c.at = list, time.Now()
	return list, nil
}

// normalizeImage puts an image reference in one canonical spelling (registry, repository, tag or
// digest), so "busybox" and "docker.io/library/busybox:latest" compare equal, as the CRI does.
func normalizeImage(ref string) string {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return ref
	}
	return r.Name()
}

func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb * 1024
		}
	}
	return 0
}

func diskTotal(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * st.Bsize
}

func utsString(f []int8) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func machineID(seed string) string {
	h := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(h[:16])
}

func goarch() string { return runtime.GOARCH }
