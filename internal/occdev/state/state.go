// Package state keeps the private record of what `occ dev up` created, so that `occ dev down`
// removes exactly that and nothing else, even after a crash or a Ctrl-C.
//
// The record lives in a private directory (mode 0700, owned by the user) holding a marker file
// and state.json. Both are written with O_EXCL before the first external mutation, so any later
// failure can always be cleaned up from the record. Every created object is appended as soon as
// it exists (fsync'd temporary file renamed over state.json). The directory is locked with
// flock(2) for the whole run, so two commands never work on one environment at once.
//
// The record never holds secrets: objects are stored as references (kind, name, UID), never
// with their content.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Version is the state.json schema version this occ writes and reads. An unknown version is
// refused rather than guessed at: a wrong guess would delete the wrong things.
const Version = 1

// File names inside the state directory.
const (
	// MarkerName is the marker that proves a directory was created by occ dev.
	MarkerName = ".occ-development"
	// MarkerContent is the exact marker content; anything else is refused.
	MarkerContent = "occ-development-state-v1\n"
	// FileName is the state record.
	FileName = "state.json"
	// holderName records who holds the lock, for the "already in use" message.
	holderName = "lock-holder.json"
)

// KindHelmRelease is the Object kind of a Helm release; APIVersion stays empty for it.
const KindHelmRelease = "HelmRelease"

// State is the content of state.json.
type State struct {
	// Version is the schema version (Version).
	Version int `json:"version"`
	// Profile is the development profile (for example "existing", "k3d", "compose").
	Profile string `json:"profile"`
	// Cluster identifies the cluster the objects were created in.
	Cluster Cluster `json:"cluster"`
	// PlatformNamespace is where the Gateway runs.
	PlatformNamespace string `json:"platformNamespace,omitempty"`
	// GatewayEndpoint is the Gateway address written into the Installation.
	GatewayEndpoint string `json:"gatewayEndpoint,omitempty"`
	// InstallationPath is the absolute path of the Installation file `up` wrote.
	InstallationPath string `json:"installationPath,omitempty"`
	// Objects are the created objects in creation order; `down` removes them in reverse.
	Objects []Object `json:"objects"`
	// CreatedAt is when the state directory was claimed; UpdatedAt the last rewrite.
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Cluster identifies the target cluster, so `down` can refuse to act on a different one.
type Cluster struct {
	// Provider is the cluster provider ("existing", "k3d").
	Provider string `json:"provider"`
	// Name is the provider's cluster name, when it has one (k3d).
	Name string `json:"name,omitempty"`
	// Kubeconfig is the absolute path of the kubeconfig used (a path, never its content).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the kubeconfig context used.
	Context string `json:"context,omitempty"`
	// Server is the API server URL.
	Server string `json:"server,omitempty"`
	// UID is the UID of the kube-system namespace: a stable identity of the cluster that
	// survives renamed contexts and moved kubeconfigs.
	UID string `json:"uid,omitempty"`
}

// Object is a reference to one created object: a Kubernetes object or a Helm release.
type Object struct {
	Kind string `json:"kind"`
	// APIVersion is empty for non-Kubernetes objects (KindHelmRelease).
	APIVersion string `json:"apiVersion,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// UID is the Kubernetes UID at creation; `down` deletes with it as a precondition so a
	// same-named object created later by someone else is never removed.
	UID       string    `json:"uid,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// HelmRelease returns the reference of a Helm release.
func HelmRelease(namespace, name string) Object {
	return Object{Kind: KindHelmRelease, Namespace: namespace, Name: name}
}

// String describes o for messages, for example "v1 Namespace oce-system".
func (o Object) String() string {
	s := o.Kind
	if o.APIVersion != "" {
		s = o.APIVersion + " " + s
	}
	if o.Namespace != "" {
		return s + " " + o.Namespace + "/" + o.Name
	}
	return s + " " + o.Name
}

// sameObject reports whether a and b name the same object (UID and time aside).
func sameObject(a, b Object) bool {
	return a.Kind == b.Kind && a.APIVersion == b.APIVersion && a.Namespace == b.Namespace && a.Name == b.Name
}

func (s State) clone() State {
	s.Objects = slices.Clone(s.Objects)
	return s
}

var (
	profilePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	kindPattern    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)
)

// Validate checks that s is a state this occ can act on. It is applied before every write and
// after every read.
func (s *State) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Version != Version {
		bad("version is %d; this occ reads version %d (use the occ release that wrote it to run occ dev down)", s.Version, Version)
	}
	if !profilePattern.MatchString(s.Profile) {
		bad("profile %q must be a lower-case name such as existing or k3d", s.Profile)
	}
	if !profilePattern.MatchString(s.Cluster.Provider) {
		bad("cluster.provider %q must be a lower-case name such as existing or k3d", s.Cluster.Provider)
	}
	if s.Cluster.Kubeconfig != "" && !filepath.IsAbs(s.Cluster.Kubeconfig) {
		bad("cluster.kubeconfig %q must be an absolute path (the state records where the kubeconfig is, never its content)", s.Cluster.Kubeconfig)
	}
	if s.Cluster.Server != "" {
		if err := checkURL(s.Cluster.Server); err != nil {
			bad("cluster.server: %v", err)
		}
	}
	if s.PlatformNamespace != "" {
		if msgs := validation.IsDNS1123Label(s.PlatformNamespace); len(msgs) > 0 {
			bad("platformNamespace %q: %s", s.PlatformNamespace, strings.Join(msgs, "; "))
		}
	}
	if s.GatewayEndpoint != "" {
		if err := checkURL(s.GatewayEndpoint); err != nil {
			bad("gatewayEndpoint: %v", err)
		}
	}
	if s.InstallationPath != "" && !filepath.IsAbs(s.InstallationPath) {
		bad("installationPath %q must be an absolute path", s.InstallationPath)
	}
	for i, o := range s.Objects {
		if !kindPattern.MatchString(o.Kind) {
			bad("objects[%d].kind %q must be a Kubernetes-style kind such as Namespace or %s", i, o.Kind, KindHelmRelease)
		}
		if o.Kind == KindHelmRelease && (o.APIVersion != "" || o.Namespace == "") {
			bad("objects[%d] (%s) must have a namespace and no apiVersion", i, o)
		}
		if strings.TrimSpace(o.Name) == "" {
			bad("objects[%d] (%s) has no name", i, o)
		}
		if o.Namespace != "" {
			if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
				bad("objects[%d].namespace %q: %s", i, o.Namespace, strings.Join(msgs, "; "))
			}
		}
		for _, p := range s.Objects[:i] {
			if sameObject(p, o) {
				bad("objects[%d] (%s) is recorded twice", i, o)
				break
			}
		}
	}
	return errors.Join(errs...)
}

// checkURL accepts an absolute URL without credentials. A URL with user info would put a
// password into a file that is meant to hold none, so it is refused, and the message shows the
// URL redacted.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the input, which may hold a password; report the rule only.
		return errors.New("not a valid URL; use scheme://host[:port]")
	}
	if u.User != nil {
		return fmt.Errorf("%s must not carry credentials (user info); the state file holds no secrets", u.Redacted())
	}
	if u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%q must be an absolute URL with scheme and host", raw)
	}
	return nil
}

// decode parses state.json strictly: unknown fields are refused, because a field this occ does
// not understand might record something `down` would then fail to remove.
func decode(data []byte) (State, error) {
	var s State
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return State{}, err
	}
	if dec.More() {
		return State{}, errors.New("trailing data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return State{}, err
	}
	return s, nil
}

func encode(s State) ([]byte, error) {
	if s.Objects == nil {
		s.Objects = []Object{}
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
