package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// addons are the parts of k3s's server beyond the control-plane binaries that k3d and providers
// rely on: the auto-deploy manifests directory (k3d rewrites coredns.yaml there; a file placed
// there is applied, as k3s applies it) and the local-path storage class with a provisioner, so
// PersistentVolumeClaims bind and their Pods schedule. No CoreDNS, traefik, servicelb or
// metrics-server runs.
type addons struct {
	client  kubernetes.Interface
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	cfg     *serverConfig
	dir     string
	applied map[string][32]byte
}

const (
	localPathProvisioner = "rancher.io/local-path"
	fieldManager         = "k3s-standin"
)

func newAddons(restCfg *rest.Config, client kubernetes.Interface, cfg *serverConfig) (*addons, error) {
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	return &addons{
		client: client, dynamic: dyn, cfg: cfg,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		dir:     filepath.Join(cfg.dataDir, "server/manifests"),
		applied: map[string][32]byte{},
	}, nil
}

// start writes the bundled manifests and applies the directory once, before k3s reports up.
func (a *addons) start(ctx context.Context) error {
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return err
	}
	if !a.cfg.disable["coredns"] {
		if err := a.writeCoreDNS(); err != nil {
			return err
		}
	}
	if !a.cfg.disable["local-storage"] {
		if err := a.ensureStorageClass(ctx); err != nil {
			return err
		}
	}
	if !a.cfg.disable["traefik"] {
		if err := a.writeGatewayAPI(); err != nil {
			return err
		}
	}
	return a.applyDir(ctx)
}

// run re-applies changed manifests and provisions local-path volumes until ctx ends. The
// directory is polled, as k3s's deploy controller does. Claims are watched, as rancher's
// provisioner (a controller over a claim informer) watches them: a claim the scheduler gives
// this node is provisioned as that change arrives, and the tick only retries.
func (a *addons) run(ctx context.Context) error {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	claims := make(chan struct{}, 1)
	storage := !a.cfg.disable["local-storage"]
	if storage {
		go a.watchClaims(ctx, claims)
	}
	provision := func() {
		if err := a.provisionLocalPath(ctx); err != nil && ctx.Err() == nil {
			logf("warning", "local-path provisioner: %v", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-claims:
			provision()
		case <-tick.C:
			if err := a.applyDir(ctx); err != nil {
				logf("warning", "deploy manifests: %v", err)
			}
			if storage {
				provision()
			}
		}
	}
}

// watchClaims signals changed (without blocking: one pending signal covers any number of
// events) on every change of a PersistentVolumeClaim, opening the watch again whenever it ends
// until ctx does; the periodic retry of run covers the gaps.
func (a *addons) watchClaims(ctx context.Context, changed chan<- struct{}) {
	for ctx.Err() == nil {
		w, err := a.client.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				logf("warning", "local-path provisioner: watch claims: %v", err)
			}
		} else {
			for range w.ResultChan() {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// writeCoreDNS writes the coredns manifest k3d rewrites (it sets data.NodeHosts in its ConfigMap
// documents). Only the ConfigMap is written: no CoreDNS Deployment could run on a played kubelet.
func (a *addons) writeCoreDNS() error {
	file := filepath.Join(a.dir, "coredns.yaml")
	if _, err := os.Stat(file); err == nil {
		return nil // k3s keeps an edited manifest across restarts only via .skip; k3d re-injects anyway
	}
	cm := corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: metav1.NamespaceSystem},
		Data: map[string]string{
			"Corefile":  fmt.Sprintf(".:53 {\n    errors\n    health\n    ready\n    kubernetes %s in-addr.arpa ip6.arpa {\n      pods insecure\n      fallthrough in-addr.arpa ip6.arpa\n    }\n    hosts /etc/coredns/NodeHosts {\n      ttl 60\n      reload 15s\n      fallthrough\n    }\n    forward . /etc/resolv.conf\n    cache 30\n    loop\n    reload\n    loadbalance\n}\n", a.cfg.clusterDomain),
			"NodeHosts": "",
		},
	}
	b, err := yaml.Marshal(cm)
	if err != nil {
		return err
	}
	return writeFileAtomic(file, b, 0o644)
}

func (a *addons) applyDir(ctx context.Context) error {
	entries, err := os.ReadDir(a.dir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") || strings.HasSuffix(n, ".json")) {
			continue
		}
		if _, err := os.Stat(filepath.Join(a.dir, n+".skip")); err == nil {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(a.dir, n))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sum := sha256.Sum256(b)
		if a.applied[n] == sum {
			continue
		}
		if err := a.apply(ctx, b); err != nil {
			errs = append(errs, fmt.Errorf("apply %s: %w", n, err))
			continue
		}
		a.applied[n] = sum
		logf("info", "Applied manifest %s", n)
	}
	return errors.Join(errs...)
}

// apply server-side-applies every document of a manifest file.
func (a *addons) apply(ctx context.Context, b []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			a.mapper.Reset()
			return fmt.Errorf("%s %s: %w", gvk, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = a.dynamic.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			ri = a.dynamic.Resource(m.Resource).Namespace(ns)
		}
		data, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)}); err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
}

func (a *addons) ensureStorageClass(ctx context.Context) error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "local-path",
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       localPathProvisioner,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	_, err := a.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create StorageClass local-path: %w", err)
	}
	return nil
}

// provisionLocalPath plays rancher's local-path provisioner: a claim of class local-path that the
// scheduler has given this node (the selected-node annotation) gets a hostPath volume on the node,
// which the real persistent-volume controller then binds; a released volume is deleted.
func (a *addons) provisionLocalPath(ctx context.Context) error {
	claims, err := a.client.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, c := range claims.Items {
		if c.Status.Phase != corev1.ClaimPending || c.Spec.VolumeName != "" || ptr.Deref(c.Spec.StorageClassName, "") != "local-path" ||
			c.Annotations["volume.kubernetes.io/selected-node"] != a.cfg.nodeName {
			continue
		}
		pvName := "pvc-" + string(c.UID)
		path := filepath.Join(a.cfg.dataDir, "storage", pvName+"_"+c.Namespace+"_"+c.Name)
		if err := os.MkdirAll(path, 0o777); err != nil {
			return err
		}
		size := c.Spec.Resources.Requests[corev1.ResourceStorage]
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{
				Name:        pvName,
				Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": localPathProvisioner},
			},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
				AccessModes:                   c.Spec.AccessModes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              "local-path",
				VolumeMode:                    c.Spec.VolumeMode,
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{a.cfg.nodeName}}},
				}}}},
			},
		}
		if _, err := a.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PersistentVolume %s for %s/%s: %w", pvName, c.Namespace, c.Name, err)
		}
	}
	vols, err := a.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, v := range vols.Items {
		if v.Annotations["pv.kubernetes.io/provisioned-by"] != localPathProvisioner || v.Status.Phase != corev1.VolumeReleased ||
			v.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			continue
		}
		if v.Spec.HostPath != nil {
			_ = os.RemoveAll(v.Spec.HostPath.Path)
		}
		if err := a.client.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete released PersistentVolume %s: %w", v.Name, err)
		}
	}
	return nil
}
