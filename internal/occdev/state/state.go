// Package state keeps the private record of what `occ dev up` created, so that `occ dev down`
// removes exactly that and nothing else, even after a crash or a Ctrl-C.
//
// The record lives in a private directory (mode 0700, owned by the user) holding a marker file
// and state.json. Both are written with O_EXCL before the first external mutation, so any later
// failure can always be cleaned up from the record. Every created object is appended as soon as
// it exists (fsync'd temporary file renamed over state.json). The directory is locked with
// flock(2) for the whole run, so two commands never work on one environment at once; inside
// one run, the steps of concurrent lanes record through the same Dir, whose methods serialise.
//
// A record names things of several types (Type): Kubernetes objects, Helm releases, and the
// k3d clusters, images, Docker networks and volumes and Compose projects the lower layers make.
// The store does not list them: the layer that makes a type registers its Kind (fields, rules,
// description), and the record is validated against it on every read and write. `down` hands
// every record to the Remover registered for its type (Removers); a type without one is kept,
// never skipped.
//
// The record never holds secrets: objects are stored as references (type, name, UID, engine ID,
// digest, identifying labels), never with their content.
package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// Version is the state.json schema version this occ writes. Version 1 (Kubernetes objects and
// Helm releases only, told apart by kind) is still read and upgraded in memory; any other
// version is refused rather than guessed at: a wrong guess would delete the wrong things.
const Version = 2

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

// State is the content of state.json.
type State struct {
	// Version is the schema version (Version).
	Version int `json:"version"`
	// Environment is the environment's name (--name); empty in a record written before
	// environments had names, which is the default one (EnvironmentName).
	Environment string `json:"environment,omitempty"`
	// Profile is the development profile (the control plane: "compose" or "kubernetes").
	Profile string `json:"profile"`
	// Cluster identifies the cluster the objects were created in.
	Cluster Cluster `json:"cluster"`
	// Engine is the Docker engine the engine objects were created in, when any were.
	Engine *Engine `json:"engine,omitempty"`
	// PlatformNamespace is where the Gateway runs.
	PlatformNamespace string `json:"platformNamespace,omitempty"`
	// GatewayEndpoint is the Gateway address written into the Installation.
	GatewayEndpoint string `json:"gatewayEndpoint,omitempty"`
	// InstallationPath is the absolute path of the Installation file `up` wrote.
	InstallationPath string `json:"installationPath,omitempty"`
	// ControlPlane is the OCE control plane `up` started, when it started one.
	ControlPlane *ControlPlane `json:"controlPlane,omitempty"`
	// Selections are the local charts, manifest and node resolver `up` was told to use.
	Selections *Selections `json:"selections,omitempty"`
	// Adopted says the directory existed (empty, private to the user) when `up` claimed it:
	// `down` and a rollback empty it and leave the directory itself, which occ did not make.
	Adopted bool `json:"adopted,omitempty"`
	// Objects are the created objects in creation order; `down` removes them in reverse.
	Objects []Object `json:"objects"`
	// CreatedAt is when the state directory was claimed; UpdatedAt the last rewrite.
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Cluster identifies the target cluster, so `down` can refuse to act on a different one. It
// is also how every command after `up` reaches the cluster: the recorded paths and names,
// never the current environment.
type Cluster struct {
	// Provider is the cluster provider ("existing", "k3d").
	Provider string `json:"provider"`
	// Name is the provider's cluster name (the kubeconfig cluster entry, or the k3d cluster).
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
	// ContainerKubeconfig is the absolute path of a kubeconfig whose server is the node's name
	// on the Docker network, for containers on that network (the Compose control plane).
	ContainerKubeconfig string `json:"containerKubeconfig,omitempty"`
	// NodeAddress is the host name or address at which containers on Network reach the node.
	NodeAddress string `json:"nodeAddress,omitempty"`
	// Network is the Docker network the cluster's node is attached to.
	Network string `json:"network,omitempty"`
}

// Engine is a container engine endpoint, recorded so `down` talks to the engine `up` used and
// never to whatever DOCKER_HOST says later.
type Engine struct {
	// Kind is the engine's kind as it identified itself: docker or podman (a registered
	// engine.Kind). A state written before the kind was recorded has none, and its engine is
	// Docker.
	Kind engine.Kind `json:"kind,omitempty"`
	// Endpoint is a unix socket URL: unix:///absolute/path.
	Endpoint string `json:"endpoint"`
	// ID is the engine's own identity where it keeps one (Docker's daemon ID, stable across
	// restarts); empty for Podman, whose API answers a new one on every call. Every command
	// after `up` compares it, and the kind, with what answers at Endpoint before it reads or
	// removes anything.
	ID string `json:"id,omitempty"`
}

// EngineDocker and EnginePodman are the names state.json writes for engine.Docker and
// engine.Podman, untyped so that a test's plain string compares with them as an engine.Kind does.
const (
	EngineDocker = "docker"
	EnginePodman = "podman"
)

// KindOrDocker is the recorded kind, Docker when the state predates the kind's record.
func (e Engine) KindOrDocker() engine.Kind { return e.Kind.OrDocker() }

// checkEngineKind refuses a kind no registered engine has (empty is Docker): this occ could not
// reach the engine the state's objects live in.
func checkEngineKind(k engine.Kind) error {
	if engine.Registered(k) {
		return nil
	}
	kinds := engine.Kinds()
	names := make([]string, len(kinds))
	for i, r := range kinds {
		names[i] = string(r)
	}
	last := len(names) - 1
	return fmt.Errorf("%q must be %s or %s", k, strings.Join(names[:last], ", "), names[last])
}

// Recorder is where a layer records what it creates: before creating it, and again once it
// exists (with its UID or engine ID), and where it forgets what it removed. *Dir implements
// it, safely for concurrent use.
type Recorder interface {
	Record(Object) error
	Forget(Object) error
}

// Owner is the value of the ownership label of everything this state creates. It is derived
// from the state's creation instant, which is recorded once and never rewritten, so `down`
// computes the same value from the record alone.
func (s State) Owner() string {
	sum := sha256.Sum256([]byte("occ-dev-state\x00" + s.CreatedAt.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(sum[:8])
}

// Has reports whether o is recorded (UID, ID and labels aside).
func (s State) Has(o Object) bool {
	return slices.ContainsFunc(s.Objects, func(r Object) bool { return sameObject(r, o) })
}

func (s State) clone() State {
	s.Objects = slices.Clone(s.Objects)
	for i := range s.Objects {
		s.Objects[i] = s.Objects[i].clone()
	}
	if s.Engine != nil {
		e := *s.Engine
		s.Engine = &e
	}
	s.ControlPlane = s.ControlPlane.clone()
	s.Selections = s.Selections.clone()
	return s
}

var (
	profilePattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	nodeAddressPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.:-]{0,252})$`)
)

// Validate checks that s is a state this occ can act on. It is applied before every write and
// after every read.
func (s *State) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Version != Version {
		bad("version is %d; this occ reads versions 1 and %d (use the occ release that wrote it to run occ dev down)", s.Version, Version)
	}
	if s.Environment != "" {
		if err := CheckEnvironment(s.Environment); err != nil {
			bad("environment: %v", err)
		}
	}
	if !profilePattern.MatchString(s.Profile) {
		bad("profile %q must be a lower-case name such as compose or kubernetes", s.Profile)
	}
	if !profilePattern.MatchString(s.Cluster.Provider) {
		bad("cluster.provider %q must be a lower-case name such as existing or k3d", s.Cluster.Provider)
	}
	for key, p := range map[string]string{"cluster.kubeconfig": s.Cluster.Kubeconfig, "cluster.containerKubeconfig": s.Cluster.ContainerKubeconfig} {
		if p != "" && !filepath.IsAbs(p) {
			bad("%s %q must be an absolute path (the state records where the kubeconfig is, never its content)", key, p)
		}
	}
	if s.Cluster.Server != "" {
		if err := checkURL(s.Cluster.Server); err != nil {
			bad("cluster.server: %v", err)
		}
	}
	if a := s.Cluster.NodeAddress; a != "" && !nodeAddressPattern.MatchString(a) {
		bad("cluster.nodeAddress %q must be a host name or an IP address", a)
	}
	if n := s.Cluster.Network; n != "" && !IsEngineName(n) {
		bad("cluster.network %q must be a Docker network name", n)
	}
	if s.Engine != nil {
		if err := checkEngineKind(s.Engine.Kind); err != nil {
			bad("engine.kind %v", err)
		}
		if err := checkEngineEndpoint(s.Engine.Endpoint); err != nil {
			bad("engine.endpoint: %v", err)
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
	if err := s.ControlPlane.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := s.Selections.validate(); err != nil {
		errs = append(errs, err)
	}
	for i, o := range s.Objects {
		if err := validateObject(o); err != nil {
			bad("objects[%d] (%s): %w", i, o, err)
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

// checkURL accepts an absolute URL without anything that may carry a credential (user info, a
// query, a fragment, percent-encoding): the state file holds no secrets, so such a URL is refused,
// and every message shows it by occ's one rule (contract.RedactURL).
func checkURL(raw string) error {
	if part := contract.CredentialPart(raw); part != "" {
		return fmt.Errorf("%q must not carry credentials (it has %s); the state file holds no secrets", contract.RedactURL(raw), part)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the input; report the rule only.
		return errors.New("not a valid URL; use scheme://host[:port]")
	}
	if u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%q must be an absolute URL with scheme and host", contract.RedactURL(raw))
	}
	return nil
}

// checkEngineEndpoint accepts unix:///absolute/path only: occ pins the engine to a local
// socket, and a TCP endpoint could point anywhere by the time `down` runs.
func checkEngineEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "unix" || u.Host != "" || !filepath.IsAbs(u.Path) || contract.CredentialPart(raw) != "" {
		return fmt.Errorf("%q must be unix:///absolute/path/to/docker.sock", contract.RedactURL(raw))
	}
	return nil
}

// decode parses state.json strictly: unknown fields are refused, because a field this occ does
// not understand might record something `down` would then fail to remove. A version 1 record
// is upgraded in memory (see upgradeV1).
func decode(data []byte) (State, error) {
	var probe struct {
		Version int `json:"version"`
	}
	// Only the version is read here; the strict decode below reports everything else.
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '{' {
		return State{}, errors.New("it is not a JSON object, as occ dev up writes it; it was changed by something else")
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&probe); err != nil {
		return State{}, jsonProblem(err)
	}
	var s State
	var err error
	if probe.Version == 1 {
		s, err = decodeV1(data)
	} else {
		err = decodeStrict(data, &s)
	}
	if err != nil {
		return State{}, err
	}
	s.readRecords()
	if err := s.Validate(); err != nil {
		return State{}, err
	}
	return s, nil
}

// readRecords gives the decoded records what is recorded once for all of them or under an
// earlier name: a record of a type's former name (Kind.Aliases) gets the type's name, so a
// state written by an earlier release loads and `down` finds its Remover; a record of an
// engine object gets the recorded engine's kind (Object.Engine). A record of an unknown type
// is left as it is, for Validate to refuse.
func (s *State) readRecords() {
	for i := range s.Objects {
		o := &s.Objects[i]
		o.Type = resolveAlias(o.Type)
		if k, ok := KindOf(o.Type); ok && k.Fields.Engine && s.Engine != nil {
			o.Engine = s.Engine.Kind
		}
	}
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// jsonProblem says what is wrong with state.json in the file's own terms: the field and the
// JSON type it holds, or where the JSON breaks, never the Go type it was decoded into.
func jsonProblem(err error) error {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the record"
		}
		return fmt.Errorf("%s holds a JSON %s where occ dev up writes %s", field, typ.Value, jsonKind(typ.Type.Kind().String()))
	case errors.As(err, &syn):
		return fmt.Errorf("it is not valid JSON (at byte %d: %v)", syn.Offset, syn)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("it ends in the middle of its JSON (the file is cut short)")
	}
	return err
}

// jsonKind is the JSON type a Go kind is written as.
func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "a list"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// stateV1 and objectV1 are the exact version 1 schema: strict decoding against them refuses
// any field version 1 did not have, so a version 2 field in a "version 1" file is an error.
type stateV1 struct {
	Version           int        `json:"version"`
	Profile           string     `json:"profile"`
	Cluster           clusterV1  `json:"cluster"`
	PlatformNamespace string     `json:"platformNamespace,omitempty"`
	GatewayEndpoint   string     `json:"gatewayEndpoint,omitempty"`
	InstallationPath  string     `json:"installationPath,omitempty"`
	Objects           []objectV1 `json:"objects"`
	CreatedAt         time.Time  `json:"createdAt"`
	UpdatedAt         time.Time  `json:"updatedAt"`
}

type clusterV1 struct {
	Provider   string `json:"provider"`
	Name       string `json:"name,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`
	Server     string `json:"server,omitempty"`
	UID        string `json:"uid,omitempty"`
}

type objectV1 struct {
	Kind       string    `json:"kind"`
	APIVersion string    `json:"apiVersion,omitempty"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        string    `json:"uid,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
}

// The version 2 types a version 1 record is upgraded to: those of the Kubernetes object and
// Helm release records, as the kubeobj and helmrelease packages register them. They are named
// here because the upgrade is part of the on-disk format, which never changes once written.
const (
	v1Kubernetes  Type = "kubernetes"
	v1HelmRelease Type = "helm-release"
)

// decodeV1 reads a version 1 record and upgrades it. Version 1 knew two kinds of record, told
// apart without ambiguity: kind HelmRelease without an apiVersion was a Helm release, anything
// else a Kubernetes object.
func decodeV1(data []byte) (State, error) {
	var v1 stateV1
	if err := decodeStrict(data, &v1); err != nil {
		return State{}, err
	}
	s := State{
		Version: Version, Profile: v1.Profile,
		Cluster:           Cluster{Provider: v1.Cluster.Provider, Name: v1.Cluster.Name, Kubeconfig: v1.Cluster.Kubeconfig, Context: v1.Cluster.Context, Server: v1.Cluster.Server, UID: v1.Cluster.UID},
		PlatformNamespace: v1.PlatformNamespace, GatewayEndpoint: v1.GatewayEndpoint, InstallationPath: v1.InstallationPath,
		CreatedAt: v1.CreatedAt, UpdatedAt: v1.UpdatedAt,
	}
	for _, o := range v1.Objects {
		if o.Kind == "HelmRelease" && o.APIVersion == "" {
			s.Objects = append(s.Objects, Object{Type: v1HelmRelease, Namespace: o.Namespace, Name: o.Name, CreatedAt: o.CreatedAt})
			continue
		}
		s.Objects = append(s.Objects, Object{Type: v1Kubernetes, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID, CreatedAt: o.CreatedAt})
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
