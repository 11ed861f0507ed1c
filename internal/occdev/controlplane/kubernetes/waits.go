package kubernetes

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/openclaw/occ/internal/kube"
)

// waitPod waits by watch (a list, then a watch from its resourceVersion, so no change is
// missed) until cond says the named Pod is done, or fails.
func waitPod(ctx context.Context, client clientset.Interface, namespace, name string, cond func(*corev1.Pod) (bool, error)) error {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	pods := client.CoreV1().Pods(namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Deleted {
			return false, nil
		}
		return cond(p)
	})
	if err != nil && (ctx.Err() != nil || errors.Is(err, watchtools.ErrWatchClosed)) {
		return fmt.Errorf("wait for Pod %s/%s: %w (%v); check its events and image (imagePullPolicy Never needs the image imported into the node)", namespace, name, kube.ErrWaitTimeout, err)
	}
	return err
}
