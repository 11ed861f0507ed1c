package compute

import (
	"context"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/driver"
)

var physicalName = regexp.MustCompile(`^oce-[0-9a-f]{15}$`)

// NamespaceIDFromArgument accepts either an OCC Namespace ID or a physical namespace name
// (oce- plus 15 hex characters) and returns the OCC Namespace ID. A physical name cannot be
// reversed (it is a digest), so its ID is read from the namespace's ownership label and
// checked against the digest; an ID always works, even once the Kubernetes namespace is gone.
func NamespaceIDFromArgument(ctx context.Context, c kubernetes.Interface, arg string) (string, error) {
	if !physicalName.MatchString(arg) {
		if err := ValidateNamespaceID(arg); err != nil {
			return "", err
		}
		return arg, nil
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, arg, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("namespace %s does not exist, so its OCC Namespace ID cannot be read from it: pass the OCC Namespace ID instead", arg)
	}
	if err != nil {
		return "", fmt.Errorf("read namespace %s: %w", arg, err)
	}
	id := ns.Labels[driver.LabelNamespace]
	if want, err := PhysicalNamespaceName(id); err != nil || want != arg || ns.Labels[driver.LabelManagedBy] != driver.ManagedByValue {
		return "", fmt.Errorf("refusing Kubernetes namespace %s without exact OCC Namespace ownership: its %s label %q does not derive its name; pass the OCC Namespace ID instead", arg, driver.LabelNamespace, id)
	}
	return id, nil
}
