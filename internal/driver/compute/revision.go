package compute

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/strictyaml"
)

// Revision file identity: every file starts with these two keys, so a stray Installation or
// Kubernetes manifest passed by mistake is refused instead of half-read.
const (
	RevisionAPIVersion = "occ.openclaw.dev/v1alpha1"
	RevisionKind       = "AgentRevision"
)

// maxRevisionFileBytes bounds what Load reads: a revision is a few kilobytes, and refusing a
// huge file early keeps a mistaken path (a log, an image) from exhausting memory.
const maxRevisionFileBytes = 1 << 20

// RevisionFile is an immutable Agent revision as `occ sandbox` reads it from YAML: what OCC
// would have admitted and frozen, plus the Harness workload Compute derives requirements from.
// The format is documented in docs/revision.md; testdata/revisions/ holds examples.
//
// The file never holds a Secret value. Environment entries that need one reference a Secret
// key (secretKeyRef) in the physical namespace, and the workload identity is a ServiceAccount
// plus a projected token that Kubernetes mints inside the Pod.
type RevisionFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	// NamespaceID is the OCC Namespace the revision belongs to; the physical namespace name is
	// derived from it.
	NamespaceID string `json:"namespaceId"`
	// AgentID is the OCC Agent.
	AgentID string `json:"agentId"`
	// RevisionID is rev_<uuid>; the UUID seeds the gateway's idempotent request IDs.
	RevisionID string `json:"revisionId"`
	// SandboxDriverID pins the revision to one Sandbox driver (drivers.sandbox.id).
	SandboxDriverID string `json:"sandboxDriverId"`

	Harness driver.Harness `json:"harness"`
	// Configuration is the native configuration exactly as frozen, that is after the
	// driver's configureAgent transform (see `occ sandbox configure-agent`).
	Configuration driver.Configuration `json:"configuration"`

	Workload Workload `json:"workload"`

	// CredentialSources are the credential sources the revision binds; the paired Credential
	// Gateway turns each into an attachment.
	CredentialSources []CredentialSourceRef `json:"credentialSources,omitempty"`
}

// Workload is the Harness workload shape.
type Workload struct {
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Env     []EnvVar `json:"env,omitempty"`
	Mounts  []Mount  `json:"mounts,omitempty"`
	// ServiceAccount is the Agent's workload identity; omit it to run without one.
	ServiceAccount *ServiceAccount `json:"serviceAccount,omitempty"`
	// LoginMode is the Harness login mode, always explicit (for example api_key).
	LoginMode string `json:"loginMode"`
}

// EnvVar is one environment entry: a literal value or a Secret key reference, never both.
type EnvVar struct {
	Name         string        `json:"name"`
	Value        *string       `json:"value,omitempty"`
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty"`
}

// SecretKeyRef names a key of a Secret in the physical namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Mount is one approved PVC subpath mount. ReadOnly is a pointer so the file must say it.
type Mount struct {
	ClaimName string `json:"claimName"`
	SubPath   string `json:"subPath"`
	MountPath string `json:"mountPath"`
	ReadOnly  *bool  `json:"readOnly"`
}

// ServiceAccount is the Agent ServiceAccount and its projected token.
type ServiceAccount struct {
	Name  string              `json:"name"`
	Token *ProjectedTokenSpec `json:"token,omitempty"`
}

// ProjectedTokenSpec is a projected ServiceAccount token volume.
type ProjectedTokenSpec struct {
	Audience          string `json:"audience"`
	ExpirationSeconds int64  `json:"expirationSeconds"`
	MountPath         string `json:"mountPath"`
	Path              string `json:"path"`
	ReadOnly          *bool  `json:"readOnly"`
}

// CredentialSourceRef is one credential source the revision binds.
type CredentialSourceRef struct {
	ID                  string `json:"id"`
	CredentialGatewayID string `json:"credentialGatewayId"`
}

// LoadRevisionFile reads, strictly decodes and validates a revision file. Every problem is
// reported at once, each naming the key, the value, the rule and the fix.
func LoadRevisionFile(filename string) (*RevisionFile, error) {
	f, err := fsutil.OpenRegular(filename)
	if err != nil {
		return nil, fmt.Errorf("read revision file %s: %w (check --revision)", filename, err)
	}
	defer f.Close()
	return ReadRevision(f, filename)
}

// ReadRevision is LoadRevisionFile of a revision read from r (standard input, for --revision -);
// name names it in errors.
func ReadRevision(r io.Reader, filename string) (*RevisionFile, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxRevisionFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read revision file %s: %w", filename, err)
	}
	if len(data) > maxRevisionFileBytes {
		return nil, fmt.Errorf("revision file %s is larger than %d bytes: it is not a revision file", filename, maxRevisionFileBytes)
	}
	rf, err := ParseRevisionFile(data)
	if err != nil {
		return nil, fmt.Errorf("revision file %s: %w", filename, err)
	}
	return rf, nil
}

// revisionDecodeOptions adapt the shared strict decoder (the one the Installation uses) to
// revision files: the frozen native configuration is free-form JSON-compatible data.
var revisionDecodeOptions = &strictyaml.Options{
	Document:  "the revision file",
	EmptyRule: "it needs " + strings.Join(strictyaml.KeysOf(reflect.TypeOf(RevisionFile{})), ", ") + " (see docs/revision.md)",
	Custom: map[reflect.Type]func(*strictyaml.Decoder, string, *yaml.Node, reflect.Value){
		reflect.TypeOf(driver.Configuration(nil)): decodeConfiguration,
	},
}

// ParseRevisionFile strictly decodes and validates revision YAML (or JSON). Keys are matched
// exactly (no case folding), unknown and duplicate keys are refused at every level, so a
// misspelled key never silently falls back to a default, and every problem is reported at once
// with its YAML path and line, as strictyaml.Problems.
func ParseRevisionFile(data []byte) (*RevisionFile, error) {
	d := strictyaml.NewDecoder(revisionDecodeOptions)
	root := d.Document(data)
	if root == nil {
		return nil, d.Problems
	}
	if root.Kind != yaml.MappingNode {
		d.Fail(strictyaml.DocumentPath, root, "a revision file must be a YAML mapping with the keys "+strings.Join(strictyaml.KeysOf(reflect.TypeOf(RevisionFile{})), ", ")+" (see docs/revision.md)")
		return nil, d.Problems
	}
	var rf RevisionFile
	d.Value("", root, reflect.ValueOf(&rf).Elem())
	r := d.Report()
	rf.validate(r)
	if problems := append(d.Problems, r.Problems...); len(problems) > 0 {
		return nil, problems.InDocumentOrder()
	}
	return &rf, nil
}

// decodeConfiguration reads the frozen native configuration into JSON-compatible values with
// the shared strictyaml.JSONValue: numbers stay exact (json.Number, as written), so freezing a
// revision never rewrites a number; values JSON cannot hold (non-string keys, infinities,
// anchors and aliases, other tags) are refused with their path.
func decodeConfiguration(d *strictyaml.Decoder, path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.Fail(path, n, "configuration must be the frozen native configuration as a mapping ({} when empty); it is "+strictyaml.AKind(n)+".")
		return
	}
	val, ok := d.JSONValue(path, n)
	if !ok {
		// The problem inside is reported where it is; the configuration itself is present, so
		// validation must not call it missing.
		d.Failed[path] = true
		return
	}
	v.Set(reflect.ValueOf(driver.Configuration(val.(map[string]any))))
}

// Validate checks every rule of the format and returns all violations as strictyaml.Problems,
// each with its path (a file decoded by ParseRevisionFile also gets lines).
func (rf *RevisionFile) Validate() error {
	r := strictyaml.NewReport(nil, nil, nil)
	rf.validate(r)
	return r.Problems.Err()
}

func (rf *RevisionFile) validate(r *strictyaml.Report) {
	if rf.APIVersion != RevisionAPIVersion {
		r.Required("apiVersion", rf.APIVersion, fmt.Sprintf("a revision file must declare apiVersion: %s and kind: %s, so an Installation or a Kubernetes manifest passed by mistake is refused.", RevisionAPIVersion, RevisionKind))
	}
	if rf.Kind != RevisionKind {
		r.Required("kind", rf.Kind, fmt.Sprintf("a revision file must declare apiVersion: %s and kind: %s, so an Installation or a Kubernetes manifest passed by mistake is refused.", RevisionAPIVersion, RevisionKind))
	}
	if rf.NamespaceID == "" {
		r.Required("namespaceId", rf.NamespaceID, "set the OCC Namespace ID (for example ns_7f3a2c).")
	} else if err := ValidateNamespaceID(rf.NamespaceID); err != nil {
		r.Bad("namespaceId", rf.NamespaceID, err.Error()+".")
	}
	if rf.AgentID == "" {
		r.Required("agentId", rf.AgentID, "set the OCC Agent ID (for example agent_support).")
	} else if e := validation.IsValidLabelValue(rf.AgentID); len(e) > 0 {
		r.Bad("agentId", rf.AgentID, fmt.Sprintf("agentId is not a valid Kubernetes label value (%s): Harness Pods carry it as a label.", e[0]))
	}
	if _, err := driver.RevisionUUID(rf.RevisionID); err != nil {
		r.Required("revisionId", rf.RevisionID, err.Error()+".")
	} else if rf.RevisionID != strings.ToLower(rf.RevisionID) {
		r.Bad("revisionId", rf.RevisionID, "revisionId must be lower-case: the ID is used verbatim in labels and gateway names.")
	}
	if rf.SandboxDriverID == "" {
		r.Required("sandboxDriverId", rf.SandboxDriverID, "pin the revision to the Sandbox driver that runs it (drivers.sandbox.id in the Installation).")
	}
	if rf.Harness.ID == "" {
		r.Required("harness.id", rf.Harness.ID, "set the Harness runtime (codex or openclaw).")
	}
	if rf.Harness.Mode != driver.HarnessModeDedicated && rf.Harness.Mode != driver.HarnessModeEmbedded {
		r.Required("harness.mode", rf.Harness.Mode, "harness.mode is not a Harness mode: use dedicated (a Sandbox driver provisions only dedicated Harnesses) or embedded.")
	}
	if rf.Configuration == nil {
		r.Missing("configuration", "give the frozen native configuration as a mapping ({} when empty).")
	}
	rf.Workload.validate(r)

	seen := map[string]string{}
	for i, cs := range rf.CredentialSources {
		key := strictyaml.IndexPath("credentialSources", i)
		switch first, dup := seen[cs.ID]; {
		case cs.ID == "":
			r.Required(key+".id", cs.ID, "name the OCC credential source.")
		case dup:
			r.Bad(key+".id", cs.ID, fmt.Sprintf("repeats %s: bind each credential source once.", first))
		default:
			seen[cs.ID] = key + ".id"
		}
		if cs.CredentialGatewayID == "" {
			r.Required(key+".credentialGatewayId", cs.CredentialGatewayID, "name the Credential Gateway that holds the source (drivers.credential_gateway.id).")
		}
	}
	if len(rf.CredentialSources) > 0 && rf.Workload.LoginMode != LoginModeAPIKey && rf.Workload.LoginMode != "" {
		r.Bad("workload.loginMode", rf.Workload.LoginMode, fmt.Sprintf("a revision that binds credential sources must use loginMode %s, because the model key is injected by the gateway and no model Secret reaches the Harness.", LoginModeAPIKey))
	}
}

// msgImageReference words a refused Harness image.
func msgImageReference(problem string) string {
	return "workload.image is not a valid image reference (" + problem + "): write registry/repository, lower case, with an optional :tag and @sha256:<64 hex digits> (for example registry.example/runtime@sha256:…)."
}

// LoginModeAPIKey is the login mode of a revision whose model credential comes from a
// credential source.
const LoginModeAPIKey = "api_key"

func (w *Workload) validate(r *strictyaml.Report) {
	if strings.TrimSpace(w.Image) == "" {
		r.Required("workload.image", w.Image, "set the Harness image (a digest-pinned reference in production).")
	} else if problem := contract.ImageReferenceProblem(w.Image); problem != "" {
		r.Bad("workload.image", w.Image, msgImageReference(problem))
	}
	if len(w.Command) == 0 {
		const rule = "give the Harness startup argv as a nonempty list (for example [node, /app/dist/harness/codex.js])."
		if r.Present("workload.command") {
			r.Bad("workload.command", "[]", rule)
		} else {
			r.Missing("workload.command", rule)
		}
	}
	for i, arg := range w.Command {
		if arg == "" {
			r.Bad(strictyaml.IndexPath("workload.command", i), arg, "argv entries must be nonempty.")
		}
	}
	if w.LoginMode == "" {
		r.Required("workload.loginMode", w.LoginMode, fmt.Sprintf("the Harness login mode must be explicit (for example %s); drivers never guess it.", LoginModeAPIKey))
	}

	names := map[string]string{}
	for i, e := range w.Env {
		key := strictyaml.IndexPath("workload.env", i)
		if msgs := validation.IsEnvVarName(e.Name); e.Name == "" || len(msgs) > 0 {
			r.Required(key+".name", e.Name, "not an environment variable name: use letters, digits, '_', '-' or '.', not starting with a digit.")
		} else if first, dup := names[e.Name]; dup {
			r.Bad(key+".name", e.Name, fmt.Sprintf("repeats %s: each variable appears once.", first))
		} else {
			names[e.Name] = key
		}
		switch {
		case e.Value != nil && e.SecretKeyRef != nil:
			r.Bad(key, e.Name, e.Name+" sets both value and secretKeyRef: set exactly one.")
		case e.Value == nil && e.SecretKeyRef == nil:
			r.Bad(key, e.Name, e.Name+` sets neither value nor secretKeyRef: set exactly one (value: "" for an empty literal).`)
		case e.SecretKeyRef != nil:
			if m := validation.IsDNS1123Subdomain(e.SecretKeyRef.Name); len(m) > 0 {
				r.Required(key+".secretKeyRef.name", e.SecretKeyRef.Name, fmt.Sprintf("not a Secret name (%s).", m[0]))
			}
			if m := validation.IsConfigMapKey(e.SecretKeyRef.Key); len(m) > 0 {
				r.Required(key+".secretKeyRef.key", e.SecretKeyRef.Key, fmt.Sprintf("not a Secret key (%s).", m[0]))
			}
		}
	}

	mountPaths := map[string]string{}
	for i, m := range w.Mounts {
		key := strictyaml.IndexPath("workload.mounts", i)
		if msgs := validation.IsDNS1123Subdomain(m.ClaimName); len(msgs) > 0 {
			r.Required(key+".claimName", m.ClaimName, fmt.Sprintf("not a PersistentVolumeClaim name (%s).", msgs[0]))
		}
		if !contract.IsExactSubPath(m.SubPath) {
			r.Required(key+".subPath", m.SubPath, "must be an exact relative directory inside the claim: not empty, not the root, not absolute, no '.', '..' or empty segments, no backslash.")
		}
		switch first, dup := mountPaths[m.MountPath]; {
		case !contract.IsExactAbsolutePath(m.MountPath):
			r.Required(key+".mountPath", m.MountPath, "must be a clean absolute path other than /.")
		case dup:
			r.Bad(key+".mountPath", m.MountPath, fmt.Sprintf("repeats %s: each path is mounted once.", first))
		default:
			mountPaths[m.MountPath] = key + ".mountPath"
		}
		if m.ReadOnly == nil {
			r.Missing(key+".readOnly", "say true or false; a mount's mode is never defaulted.")
		}
	}

	if sa := w.ServiceAccount; sa != nil {
		const p = "workload.serviceAccount"
		if msgs := validation.IsDNS1123Subdomain(sa.Name); len(msgs) > 0 {
			r.Required(p+".name", sa.Name, fmt.Sprintf("not a ServiceAccount name (%s).", msgs[0]))
		}
		if t := sa.Token; t != nil {
			if t.Audience == "" {
				r.Required(p+".token.audience", t.Audience, "name the audience the token is minted for.")
			}
			// Kubernetes refuses projected tokens shorter than ten minutes.
			if t.ExpirationSeconds < 600 || t.ExpirationSeconds > 1<<32 {
				r.Required(p+".token.expirationSeconds", strconv.FormatInt(t.ExpirationSeconds, 10), fmt.Sprintf("must be between 600 and %d seconds.", int64(1)<<32))
			}
			if !contract.IsExactAbsolutePath(t.MountPath) {
				r.Required(p+".token.mountPath", t.MountPath, "must be a clean absolute directory other than /.")
			}
			if t.Path == "" || strings.Contains(t.Path, "/") || t.Path == "." || t.Path == ".." {
				r.Required(p+".token.path", t.Path, "must be a plain file name inside mountPath.")
			}
			if t.ReadOnly == nil {
				r.Missing(p+".token.readOnly", "say true or false.")
			}
		}
	}
}

// Revision returns the immutable revision the file describes.
func (rf *RevisionFile) Revision() driver.Revision {
	return driver.Revision{
		AgentID:         rf.AgentID,
		ID:              rf.RevisionID,
		NamespaceID:     rf.NamespaceID,
		Harness:         rf.Harness,
		Configuration:   rf.Configuration.Clone(),
		SandboxDriverID: rf.SandboxDriverID,
	}
}

// Sources returns the bound credential sources in the contract's form.
func (rf *RevisionFile) Sources() []driver.CredentialSource {
	out := make([]driver.CredentialSource, 0, len(rf.CredentialSources))
	for _, cs := range rf.CredentialSources {
		out = append(out, driver.CredentialSource{ID: cs.ID, NamespaceID: rf.NamespaceID, CredentialGatewayID: cs.CredentialGatewayID})
	}
	return out
}

// LabelHarness names the Harness runtime on the workload, for people reading the cluster.
// Compute selects the revision's Pod by driver.LabelAgent and driver.LabelRevision, which the
// gateway copies from the template onto the Pod, so Compute finds the exact revision's Pod
// without knowing the provider's naming.
const LabelHarness = contract.LabelHarness

// HarnessLabels returns the Agent and revision labels the Harness workload must carry.
func (rf *RevisionFile) HarnessLabels() map[string]string {
	return map[string]string{
		driver.LabelManagedBy: driver.ManagedByValue,
		driver.LabelNamespace: rf.NamespaceID,
		driver.LabelAgent:     rf.AgentID,
		driver.LabelRevision:  rf.RevisionID,
		LabelHarness:          rf.Harness.ID,
		// A provider-owned Harness receives none of Compute's ordinary egress grants; the
		// provider's own workload fence alone decides what it may reach.
		driver.LabelNetworkProfile: driver.NetworkProfileProviderFenced,
	}
}

// HarnessSelector is the label selector that matches exactly this revision's Harness Pods: its
// OCC Namespace, Agent and revision labels (the revision ID alone is unique; the other two make
// a mislabelled Pod of another tenant impossible to mistake for it).
func (rf *RevisionFile) HarnessSelector() string {
	return labels.SelectorFromSet(labels.Set{
		driver.LabelNamespace: rf.NamespaceID,
		driver.LabelAgent:     rf.AgentID,
		driver.LabelRevision:  rf.RevisionID,
	}).String()
}

// EnvCodexLoginMode is the variable through which the Codex Harness learns its login mode.
const EnvCodexLoginMode = "CODEX_LOGIN_MODE"

// Requirements derives the HarnessWorkloadRequirements for the revision, without credential
// attachments (Compute adds those after the Credential Gateway issues them). It is pure: the
// same file always yields the same requirements.
func (rf *RevisionFile) Requirements() (driver.HarnessWorkloadRequirements, error) {
	w := rf.Workload
	req := driver.HarnessWorkloadRequirements{
		Image:     w.Image,
		Command:   append([]string(nil), w.Command...),
		LoginMode: w.LoginMode,
		Labels:    rf.HarnessLabels(),
	}
	for _, e := range w.Env {
		v := driver.EnvVar{Name: e.Name}
		if e.SecretKeyRef != nil {
			v.SecretKeyRef = &driver.SecretKeyRef{Name: e.SecretKeyRef.Name, Key: e.SecretKeyRef.Key}
		} else if e.Value != nil {
			v.Value = *e.Value
		}
		req.Env = append(req.Env, v)
	}
	// Codex reads its login mode from the environment. Compute renders it from the explicit
	// loginMode, so the environment and the requirement can never disagree.
	if rf.Harness.ID == driver.HarnessCodex {
		found := false
		for _, e := range req.Env {
			if e.Name != EnvCodexLoginMode {
				continue
			}
			found = true
			if !e.Literal() || e.Value != w.LoginMode {
				return driver.HarnessWorkloadRequirements{}, fmt.Errorf("workload.env %s must be the literal loginMode %q when given: remove the entry and let Compute render it from workload.loginMode", EnvCodexLoginMode, w.LoginMode)
			}
		}
		if !found {
			req.Env = append(req.Env, driver.EnvVar{Name: EnvCodexLoginMode, Value: w.LoginMode})
		}
	}
	for _, m := range w.Mounts {
		req.Mounts = append(req.Mounts, driver.WorkspaceMount{ClaimName: m.ClaimName, SubPath: m.SubPath, MountPath: m.MountPath, ReadOnly: *m.ReadOnly})
	}
	if sa := w.ServiceAccount; sa != nil {
		id := &driver.WorkloadIdentity{ServiceAccountName: sa.Name}
		if t := sa.Token; t != nil {
			id.Token = &driver.ProjectedToken{Audience: t.Audience, ExpirationSeconds: t.ExpirationSeconds, MountPath: t.MountPath, Path: t.Path, ReadOnly: *t.ReadOnly}
		}
		req.WorkloadIdentity = id
	}
	return req, nil
}
