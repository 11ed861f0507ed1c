package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// Provider name prefixes OCC issues: CredentialProviderPrefix for the provider the paired
// Credential Gateway keeps per credential source, RuntimeProviderPrefix for a revision's Harness
// runtime provider.
const (
	CredentialProviderPrefix = "oce-cs-"
	RuntimeProviderPrefix    = "oce-runtime-"
)

// MaxSandboxProviders is how many providers OpenShell attaches to one Sandbox.
const MaxSandboxProviders = 32

// The exact shapes of the names: the prefix and 24 (credential source) or 16 (runtime) hex
// digits of a SHA-256.
var (
	credentialProvider = regexp.MustCompile(`^oce-cs-[0-9a-f]{24}$`)
	runtimeProvider    = regexp.MustCompile(`^oce-runtime-[0-9a-f]{16}$`)
)

// CredentialProviderName is the OpenShell provider the Credential Gateway keeps for a credential
// source: oce-cs- and the first 24 hex digits of SHA-256(source ID). The name is the attachment
// ref, which is how the Sandbox side proves the attachment was issued by its Backend.
func CredentialProviderName(sourceID string) string {
	sum := sha256.Sum256([]byte(sourceID))
	return CredentialProviderPrefix + hex.EncodeToString(sum[:])[:24]
}

// IsCredentialProviderName reports whether name has the OCC credential-source shape
// ^oce-cs-[0-9a-f]{24}$, the namespace static providers must stay outside of.
func IsCredentialProviderName(name string) bool { return credentialProvider.MatchString(name) }

// IsRuntimeProviderName reports whether name has the shape of a revision's runtime provider,
// ^oce-runtime-[0-9a-f]{16}$.
func IsRuntimeProviderName(name string) bool { return runtimeProvider.MatchString(name) }

// StaticProviderProblem returns why name cannot be a static provider (drivers.sandbox
// configuration.providers), or "": it must be nonempty and outside the names OCC issues, so it can
// never stand in for a credential attachment or a revision's runtime files.
func StaticProviderProblem(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "This name is empty."
	case IsCredentialProviderName(name):
		return "Names of the form oce-cs-<24 hex digits> belong to OCC credential attachments."
	case IsRuntimeProviderName(name):
		return "Names of the form oce-runtime-<16 hex digits> belong to OCC revision runtime providers."
	}
	return ""
}
