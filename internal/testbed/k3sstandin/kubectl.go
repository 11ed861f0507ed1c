package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectl answers the commands k3d's entrypoint script runs against its own node:
// `kubectl uncordon $HOSTNAME` once the server is up (retried every 3 s until it works) and
// `kubectl drain $HOSTNAME --force …` on SIGTERM. Anything else is refused by name: the real
// kubectl is not in the node.
func kubectl(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: kubectl uncordon|cordon|drain NODE (the stand-in supports only these)")
	}
	verb, node := args[0], args[1]
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = adminKubeconfig
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch verb {
	case "uncordon":
		return setUnschedulable(ctx, client, node, false)
	case "cordon":
		return setUnschedulable(ctx, client, node, true)
	case "drain":
		if err := setUnschedulable(ctx, client, node, true); err != nil {
			return err
		}
		// --force --disable-eviction, as k3d passes: delete the node's Pods directly.
		pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
		})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if isDaemonSetPod(p.OwnerReferences) {
				continue
			}
			if err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("drain: delete pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		}
		fmt.Printf("node/%s drained\n", node)
		return nil
	}
	return fmt.Errorf("kubectl %s: not supported by the stand-in (supported: uncordon, cordon, drain)", strings.Join(args, " "))
}

func setUnschedulable(ctx context.Context, client kubernetes.Interface, node string, value bool) error {
	// A typed patch that keeps "unschedulable": false, which corev1.NodeSpec would omit.
	type specPatch struct {
		Unschedulable bool `json:"unschedulable"`
	}
	patch, _ := json.Marshal(struct {
		Spec specPatch `json:"spec"`
	}{specPatch{value}})
	if _, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	state := "uncordoned"
	if value {
		state = "cordoned"
	}
	fmt.Printf("node/%s %s\n", node, state)
	return nil
}

func isDaemonSetPod(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.Kind == "DaemonSet" && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}
