package state

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// Type is what kind of thing a record names. It decides which fields the record carries and
// which remover `down` hands it to, so a record of a type this occ does not know is refused
// rather than guessed at. Each type is defined, with its Kind, by the layer that makes its
// records.
type Type string

// Object is the record of one thing `up` created. Which fields a record carries depends on its
// Type (see validateObject); the rest stay empty. No field ever holds content: a record names
// and identifies, so recording a Secret can never copy its data.
type Object struct {
	Type Type `json:"type"`
	// APIVersion and Kind name a Kubernetes object's kind (Kubernetes object records only).
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
	// Engine is the kind of the engine an engine object lives in (empty is Docker), for records
	// of a kind with Fields.Engine, so messages name it. It is not written with the record: the
	// state records its engine once (State.Engine), and reading a state fills it from there.
	// The layer that makes a record sets it.
	Engine engine.Kind `json:"-"`
}

// String describes o for messages in its Kind's words, for example "v1 Namespace oce-system" or
// "Helm release oce-system/openshell-gateway".
func (o Object) String() string {
	if k, ok := KindOf(o.Type); ok {
		return k.Describe(o)
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
	engineIDPattern = regexp.MustCompile(`^(sha256:)?[0-9a-f]{12,64}$`)
	labelKeyPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]{0,252})$`)
)

// validateObject checks one record against the rules every record shares and those of its
// Kind.
func validateObject(o Object) error {
	k, ok := KindOf(o.Type)
	if !ok {
		return fmt.Errorf("type %q is not one this occ records (use the occ release that wrote the state to run occ dev down)", o.Type)
	}
	f := k.Fields
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	forbid := func(allowed bool, field string, set bool) {
		if set && !allowed {
			bad("%s is not a field of a %s record", field, o.Type)
		}
	}
	forbid(f.APIVersionKind, "apiVersion", o.APIVersion != "")
	forbid(f.APIVersionKind, "kind", o.Kind != "")
	forbid(f.Namespace, "namespace", o.Namespace != "")
	forbid(f.UID, "uid", o.UID != "")
	forbid(f.ID, "id", o.ID != "")
	forbid(f.Digest, "digest", o.Digest != "")
	forbid(f.Labels, "labels", len(o.Labels) > 0)
	forbid(f.Engine, "engine", o.Engine != "")
	if err := checkEngineKind(o.Engine); err != nil {
		bad("engine %v", err)
	}

	if strings.TrimSpace(o.Name) == "" {
		bad("name is empty")
	}
	if o.Namespace != "" {
		if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
			bad("namespace %q: %s", o.Namespace, strings.Join(msgs, "; "))
		}
	}
	if err := k.Check(o); err != nil {
		errs = append(errs, err)
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
