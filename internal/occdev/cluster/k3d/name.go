package k3d

import (
	"crypto/rand"
	"fmt"
	"regexp"

	"github.com/openclaw/occ/internal/occdev/option"
)

// The reference's settings of the k3d cluster, named in errors about their values.
const (
	// EnvClusterName names the cluster.
	EnvClusterName = "OCC_DEVELOPMENT_KUBERNETES_CLUSTER"
	// EnvAPIPort is the Kubernetes API's port on 127.0.0.1.
	EnvAPIPort = "OCC_DEVELOPMENT_KUBERNETES_API_PORT"
	// EnvDiskThresholdPercent sets the kubelet's disk eviction thresholds.
	EnvDiskThresholdPercent = "OCC_DEVELOPMENT_KUBERNETES_DISK_THRESHOLD_PERCENT"
)

// NamePrefix starts every cluster name occ creates, so occ's clusters are recognisable in
// `k3d cluster list` and `docker ps`.
const NamePrefix = "occ-dev-"

// MaxNameLength is k3d's own limit (it derives host names of up to 64 characters from the cluster
// name); a longer name would pass occ and fail half-way through k3d.
const MaxNameLength = 32

// randomSuffixLength is how many random characters a default name carries.
const randomSuffixLength = 10

var namePattern = regexp.MustCompile(`^occ-dev-[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

// NameError is a cluster name occ refuses: a bad setting (the CLI's usage error), naming the
// variable, the value and the rule. Nothing has been created when it is returned.
type NameError = option.Error

// CheckName applies the cluster name rule.
func CheckName(name string) error {
	if len(name) > MaxNameLength || !namePattern.MatchString(name) {
		return &NameError{
			Option: EnvClusterName, Value: name,
			Rule: fmt.Sprintf("must start with %q, be at most %d characters, contain only lowercase letters, digits and hyphens, and end with a lowercase letter or digit (k3d derives container and host names from it)", NamePrefix, MaxNameLength),
			Fix:  fmt.Sprintf("choose a name such as %smycluster, or unset %s for a random one", NamePrefix, EnvClusterName),
		}
	}
	return nil
}

// NewName returns NamePrefix followed by random lowercase letters and digits: a fresh cluster
// name that cannot collide with a cluster someone named by hand.
func NewName() (string, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, randomSuffixLength)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a cluster name: %w", err)
	}
	for i := range b {
		// 256 is not a multiple of 36, so a plain modulo would favour some characters a little;
		// the name is not a secret, only unlikely to collide, so that bias is harmless.
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return NamePrefix + string(b), nil
}

// ResolveName returns the configured name after checking it, or a new random one when it is
// empty.
func ResolveName(configured string) (string, error) {
	if configured == "" {
		return NewName()
	}
	if err := CheckName(configured); err != nil {
		return "", err
	}
	return configured, nil
}
