package compute

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// NamespacePrefix starts every physical Kubernetes namespace Compute creates for an OCC
// Namespace.
const NamespacePrefix = "oce-"

// namespaceDigestLength is how many lowercase hex characters of the digest follow the prefix.
// OpenShell v0.1.x limits Workspace names to 19 characters and requires the Workspace name to
// equal the Kubernetes namespace name, so prefix (4) + digest (15) is exactly the limit.
const namespaceDigestLength = 15

// MaxNamespaceNameLength is OpenShell's 19-character Workspace name limit.
const MaxNamespaceNameLength = 19

// PhysicalNamespaceName returns the Kubernetes namespace name for an OCC Namespace ID:
// "oce-" followed by the first 15 lowercase hexadecimal characters of SHA-256 over the UTF-8
// bytes of the ID. The name is deterministic, so every Compute run (and cleanup long after
// provisioning) finds the same namespace without recorded state; it is a valid DNS-1123
// label (it starts with a letter and holds only [a-z0-9-]); and 60 bits of digest keep
// accidental collisions negligible for any realistic number of Namespaces.
func PhysicalNamespaceName(namespaceID string) (string, error) {
	if err := ValidateNamespaceID(namespaceID); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(namespaceID))
	return NamespacePrefix + hex.EncodeToString(sum[:])[:namespaceDigestLength], nil
}

// ValidateNamespaceID checks that an OCC Namespace ID can be stamped on Kubernetes objects:
// it is carried as a label value, so it must be a non-empty Kubernetes label value.
func ValidateNamespaceID(namespaceID string) error {
	if namespaceID == "" {
		return fmt.Errorf("OCC Namespace ID is empty: set namespace.id to the Namespace's ID (for example ns_7f3a2c)")
	}
	if errs := validation.IsValidLabelValue(namespaceID); len(errs) > 0 {
		return fmt.Errorf("OCC Namespace ID %q is not a valid Kubernetes label value (%s): use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", namespaceID, errs[0])
	}
	return nil
}
