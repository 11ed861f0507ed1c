package state

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Type is what kind of thing a record names. It decides which fields the record carries and
// which remover `down` hands it to, so a record of a type this occ does not know is refused
// rather than guessed at.
type Type string

// The recorded types. Kubernetes objects and Helm releases are created by the platform layer;
// the others are recorded by the cluster, image and control-plane layers that create them.
const (
	// TypeKubernetes is one Kubernetes object: apiVersion, kind, namespace, name and UID.
	TypeKubernetes Type = "kubernetes"
	// TypeHelmRelease is a Helm release (namespace and name), which Helm tracks together with
	// everything it installed.
	TypeHelmRelease Type = "helm-release"
	// TypeK3dCluster is a k3d cluster occ created: its name and the k3d labels that identify it.
	TypeK3dCluster Type = "k3d-cluster"
	// TypeDockerImage is an image occ pulled into the Docker engine: repository, pinned digest
	// and the local image ID the pull produced.
	TypeDockerImage Type = "docker-image"
	// TypeClusterImage is an image occ imported into the recorded cluster's node: repository,
	// pinned digest and the config digest found in the node.
	TypeClusterImage Type = "cluster-image"
	// TypeDockerNetwork is a Docker network occ created: name, engine ID and labels.
	TypeDockerNetwork Type = "docker-network"
	// TypeDockerVolume is a Docker volume occ created: name and labels.
	TypeDockerVolume Type = "docker-volume"
	// TypeComposeProject is a Compose project occ started: its project name.
	TypeComposeProject Type = "compose-project"
	// TypeComposeServices are the long-running services of a recorded Compose project that act
	// on the cluster (the OCE API and worker): its project name. Recorded before they start, so
	// `down` stops them before anything else is removed.
	TypeComposeServices Type = "compose-services"
)

// Object is the record of one thing `up` created. Which fields a record carries depends on its
// Type (see validateObject); the rest stay empty. No field ever holds content: a record names
// and identifies, so recording a Secret can never copy its data.
type Object struct {
	Type Type `json:"type"`
	// APIVersion and Kind name a Kubernetes object's kind (TypeKubernetes only).
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// Namespace is a Kubernetes object's or a Helm release's namespace.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name: a Kubernetes or Helm name, a k3d cluster or Compose project
	// name, a Docker network or volume name, or an image repository (without tag or digest).
	Name string `json:"name"`
	// UID is the Kubernetes UID at creation; `down` deletes with it as a precondition so a
	// same-named object created later by someone else is never removed.
	UID string `json:"uid,omitempty"`
	// ID is the engine's identifier of a Docker object (a network ID, a local image ID or a
	// config digest), filled once the object exists.
	ID string `json:"id,omitempty"`
	// Digest is the pinned manifest digest of an image (sha256:…).
	Digest string `json:"digest,omitempty"`
	// Labels are the labels that identify an engine object or k3d cluster as this state's.
	// They are identity, never configuration: they must not hold secrets.
	Labels map[string]string `json:"labels,omitempty"`
	// CreatedAt is when the record was first made.
	CreatedAt time.Time `json:"createdAt"`
}

// HelmRelease returns the record of a Helm release.
func HelmRelease(namespace, name string) Object {
	return Object{Type: TypeHelmRelease, Namespace: namespace, Name: name}
}

// String describes o for messages, for example "v1 Namespace oce-system" or
// "Helm release oce-system/openshell-gateway".
func (o Object) String() string {
	switch o.Type {
	case TypeKubernetes:
		s := o.APIVersion + " " + o.Kind
		if o.Namespace != "" {
			return s + " " + o.Namespace + "/" + o.Name
		}
		return s + " " + o.Name
	case TypeHelmRelease:
		return "Helm release " + o.Namespace + "/" + o.Name
	case TypeK3dCluster:
		return "k3d cluster " + o.Name
	case TypeDockerImage:
		return "Docker image " + o.Name + "@" + o.Digest
	case TypeClusterImage:
		return "cluster image " + o.Name + "@" + o.Digest
	case TypeDockerNetwork:
		return "Docker network " + o.Name
	case TypeDockerVolume:
		return "Docker volume " + o.Name
	case TypeComposeProject:
		return "Compose project " + o.Name
	case TypeComposeServices:
		return "Compose services of " + o.Name
	}
	return string(o.Type) + " " + o.Name
}

// sameObject reports whether a and b name the same thing. UID, ID and labels are attributes
// a repeated step refreshes, not identity.
func sameObject(a, b Object) bool {
	return a.Type == b.Type && a.Kind == b.Kind && a.APIVersion == b.APIVersion &&
		a.Namespace == b.Namespace && a.Name == b.Name && a.Digest == b.Digest
}

func (o Object) clone() Object {
	o.Labels = maps.Clone(o.Labels)
	return o
}

var (
	kindPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)
	// k3d cluster names become container and network names; the cluster layer refuses longer
	// names up front, and the record never holds one it could not have created.
	k3dNamePattern     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)
	composeNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	engineNamePattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	repositoryPattern  = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)+$|^[a-z0-9]+([._-][a-z0-9]+)*$`)
	digestPattern      = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	engineIDPattern    = regexp.MustCompile(`^(sha256:)?[0-9a-f]{12,64}$`)
	labelKeyPattern    = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]{0,252})$`)
)

// fields says which optional fields a record type may carry; name is always required.
type fields struct {
	kubernetes, namespace, uid, id, digest, labels bool
}

// typeFields lists the known types and their fields. A type missing here is refused.
func typeFields(t Type) (fields, bool) {
	switch t {
	case TypeKubernetes:
		return fields{kubernetes: true, namespace: true, uid: true}, true
	case TypeHelmRelease:
		return fields{namespace: true}, true
	case TypeK3dCluster:
		return fields{labels: true}, true
	case TypeDockerImage, TypeClusterImage:
		return fields{id: true, digest: true}, true
	case TypeDockerNetwork:
		return fields{id: true, labels: true}, true
	case TypeDockerVolume:
		return fields{labels: true}, true
	case TypeComposeProject:
		return fields{labels: true}, true
	case TypeComposeServices:
		return fields{}, true
	}
	return fields{}, false
}

// validateObject checks one record against the rules of its type.
func validateObject(o Object) error {
	f, ok := typeFields(o.Type)
	if !ok {
		return fmt.Errorf("type %q is not one this occ records (use the occ release that wrote the state to run occ dev down)", o.Type)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	forbid := func(allowed bool, field string, set bool) {
		if set && !allowed {
			bad("%s is not a field of a %s record", field, o.Type)
		}
	}
	forbid(f.kubernetes, "apiVersion", o.APIVersion != "")
	forbid(f.kubernetes, "kind", o.Kind != "")
	forbid(f.namespace, "namespace", o.Namespace != "")
	forbid(f.uid, "uid", o.UID != "")
	forbid(f.id, "id", o.ID != "")
	forbid(f.digest, "digest", o.Digest != "")
	forbid(f.labels, "labels", len(o.Labels) > 0)

	if strings.TrimSpace(o.Name) == "" {
		bad("name is empty")
	}
	if o.Namespace != "" {
		if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
			bad("namespace %q: %s", o.Namespace, strings.Join(msgs, "; "))
		}
	}
	switch o.Type {
	case TypeKubernetes:
		if _, err := schema.ParseGroupVersion(o.APIVersion); err != nil || o.APIVersion == "" {
			bad("apiVersion %q must be a Kubernetes group/version such as v1 or apps/v1", o.APIVersion)
		}
		if !kindPattern.MatchString(o.Kind) {
			bad("kind %q must be a Kubernetes kind such as Namespace", o.Kind)
		}
		if strings.ContainsAny(o.Name, "/ ") {
			bad("name %q is not a Kubernetes object name", o.Name)
		}
	case TypeHelmRelease:
		if o.Namespace == "" {
			bad("a Helm release needs its namespace")
		}
		if msgs := validation.IsDNS1123Subdomain(o.Name); len(msgs) > 0 || len(o.Name) > 53 {
			bad("Helm release name %q must be a DNS subdomain of at most 53 characters", o.Name)
		}
	case TypeK3dCluster:
		if !k3dNamePattern.MatchString(o.Name) {
			bad("k3d cluster name %q must be 1 to 32 lower-case letters, digits and '-', starting and ending with a letter or digit", o.Name)
		}
		if len(o.Labels) == 0 {
			bad("a k3d cluster record needs the labels that identify the cluster")
		}
	case TypeDockerImage, TypeClusterImage:
		if !repositoryPattern.MatchString(o.Name) {
			bad("image repository %q must be a repository name without tag or digest", o.Name)
		}
		if !digestPattern.MatchString(o.Digest) {
			bad("image digest %q must be sha256: and 64 lower-case hex digits", o.Digest)
		}
	case TypeDockerNetwork, TypeDockerVolume:
		if !engineNamePattern.MatchString(o.Name) {
			bad("Docker object name %q must be letters, digits, '_', '.' and '-', at most 128", o.Name)
		}
	case TypeComposeProject, TypeComposeServices:
		if !composeNamePattern.MatchString(o.Name) {
			bad("Compose project name %q must be lower-case letters, digits, '_' and '-', starting with a letter or digit", o.Name)
		}
	}
	if o.ID != "" && !engineIDPattern.MatchString(o.ID) {
		bad("id %q must be an engine ID (12 to 64 lower-case hex digits, optionally after sha256:)", o.ID)
	}
	for k, v := range o.Labels {
		if !labelKeyPattern.MatchString(k) {
			bad("label key %q must be letters, digits, '.', '_', '/' and '-'", k)
		}
		if len(v) > 256 || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			bad("label %s: the value must be at most 256 printable characters", k)
		}
	}
	return errors.Join(errs...)
}
