package openshell

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/driver"
)

// MaxNameLength is OpenShell's limit for Workspace, Sandbox and service names: the gateway
// joins three of them with "--" into one 63-character DNS label.
const MaxNameLength = 19

// CredentialProviderPrefix starts every provider name the paired Credential Gateway issues.
const CredentialProviderPrefix = contract.CredentialProviderPrefix

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// SandboxName is the stable Sandbox name of a revision: the configured prefix, a hyphen, and
// the leading hex digits of SHA-256(revision ID), exactly 19 characters in all. Deriving it
// (instead of recording a generated name) is what lets cleanup find the Sandbox after a lost
// create response or after its Pod is gone.
func SandboxName(prefix, revisionID string) (string, error) {
	if prefix == "" || len(prefix) > 2 || !dnsLabel.MatchString(prefix) {
		return "", &driver.Error{Code: driver.CodeHarnessUnsupported, Message: "Sandbox name prefix is too long for OpenShell's 19-character limit.",
			Err: errorf("sandboxNamePrefix %q must be 1 or 2 lowercase letters or digits", prefix)}
	}
	return prefix + "-" + sha256Hex(revisionID)[:MaxNameLength-len(prefix)-1], nil
}

// CredentialProviderName is the OpenShell provider the Credential Gateway keeps for a
// credential source (contract.CredentialProviderName): the attachment ref, which is how the
// Sandbox side proves it was issued by this Backend.
func CredentialProviderName(sourceID string) string { return contract.CredentialProviderName(sourceID) }

// IsCredentialProviderName reports whether name has the OCC credential-source shape.
func IsCredentialProviderName(name string) bool { return contract.IsCredentialProviderName(name) }

// workspaceNameMessage is the refusal for a namespace name OpenShell cannot use as a Workspace.
const workspaceNameMessage = "OpenShell operator-mode Workspace names require a Kubernetes namespace name that is a DNS-1123 label of at most 19 characters."

// WorkspaceName returns the Workspace name for a physical namespace: the same name, which must
// fit OpenShell's 19-character DNS label. Kubernetes Compute names namespaces oce- plus a
// 15-character digest precisely so this holds.
func WorkspaceName(namespaceName string) (string, error) {
	if len(namespaceName) == 0 || len(namespaceName) > MaxNameLength || !dnsLabel.MatchString(namespaceName) {
		return "", &driver.Error{Message: workspaceNameMessage, Err: errorf("namespace name %q has %d characters", namespaceName, len(namespaceName))}
	}
	return namespaceName, nil
}

// runtimeSubPath is the per-revision PVC subpath mounted at the runtime root, so one revision's
// runtime state never leaks into another's (contract.RuntimeSubPath).
func runtimeSubPath(revisionID string) string { return contract.RuntimeSubPath(revisionID) }

// volumeName names the Pod volume of a PVC: stable per claim and within OpenShell's DNS-label
// rules whatever the claim name is.
func volumeName(claimName string) string {
	return "workspace-" + sha256Hex(claimName)[:12]
}
