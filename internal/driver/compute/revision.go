package compute

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/driver"
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
	f, err := os.Open(filename)
	if err != nil {
		return nil, fmt.Errorf("read revision file %s: %w (check --revision)", filename, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRevisionFileBytes+1))
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

// ParseRevisionFile strictly decodes and validates revision YAML (or JSON). Unknown keys and
// duplicate keys are refused at every level, so a misspelled key never silently falls back to
// a default.
func ParseRevisionFile(data []byte) (*RevisionFile, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("decode YAML: %w (fix the syntax or the duplicate key)", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	// Numbers in the native configuration stay exact (json.Number), so freezing a revision
	// never rewrites an integer as a float.
	dec.UseNumber()
	var rf RevisionFile
	if err := dec.Decode(&rf); err != nil {
		return nil, fmt.Errorf("decode: %w (see docs/revision.md for the keys a revision file accepts)", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode: more than one document; a revision file holds exactly one revision")
	}
	if err := rf.Validate(); err != nil {
		return nil, err
	}
	return &rf, nil
}

// Validate checks every rule of the format and returns all violations joined.
func (rf *RevisionFile) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if rf.APIVersion != RevisionAPIVersion || rf.Kind != RevisionKind {
		bad("apiVersion %q / kind %q: a revision file must declare apiVersion: %s and kind: %s", rf.APIVersion, rf.Kind, RevisionAPIVersion, RevisionKind)
	}
	if err := ValidateNamespaceID(rf.NamespaceID); err != nil {
		bad("namespaceId: %w", err)
	}
	if rf.AgentID == "" {
		bad("agentId is empty: set the OCC Agent ID (for example agent_support)")
	} else if e := validation.IsValidLabelValue(rf.AgentID); len(e) > 0 {
		bad("agentId %q is not a valid Kubernetes label value (%s): Harness Pods carry it as a label", rf.AgentID, e[0])
	}
	if _, err := driver.RevisionUUID(rf.RevisionID); err != nil {
		bad("revisionId: %w", err)
	} else if rf.RevisionID != strings.ToLower(rf.RevisionID) {
		bad("revisionId %q must be lower-case: the ID is used verbatim in labels and gateway names", rf.RevisionID)
	}
	if rf.SandboxDriverID == "" {
		bad("sandboxDriverId is empty: pin the revision to the Sandbox driver that runs it (drivers.sandbox.id in the Installation)")
	}
	if rf.Harness.ID == "" {
		bad("harness.id is empty: set the Harness runtime (codex or openclaw)")
	}
	if rf.Harness.Mode != driver.HarnessModeDedicated && rf.Harness.Mode != driver.HarnessModeEmbedded {
		bad("harness.mode %q is not a Harness mode: use dedicated (a Sandbox driver provisions only dedicated Harnesses) or embedded", rf.Harness.Mode)
	}
	if rf.Configuration == nil {
		bad("configuration is missing: give the frozen native configuration as an object ({} when empty)")
	}
	errs = append(errs, rf.Workload.validate()...)

	seen := map[string]bool{}
	for i, cs := range rf.CredentialSources {
		key := fmt.Sprintf("credentialSources[%d]", i)
		switch {
		case cs.ID == "":
			bad("%s.id is empty: name the OCC credential source", key)
		case seen[cs.ID]:
			bad("%s.id %q repeats an earlier source: bind each credential source once", key, cs.ID)
		}
		seen[cs.ID] = true
		if cs.CredentialGatewayID == "" {
			bad("%s.credentialGatewayId is empty: name the Credential Gateway that holds the source (drivers.credential_gateway.id)", key)
		}
	}
	if len(rf.CredentialSources) > 0 && rf.Workload.LoginMode != LoginModeAPIKey {
		bad("workload.loginMode %q: a revision that binds credential sources must use loginMode %s, because the model key is injected by the gateway and no model Secret reaches the Harness", rf.Workload.LoginMode, LoginModeAPIKey)
	}
	return errors.Join(errs...)
}

// LoginModeAPIKey is the login mode of a revision whose model credential comes from a
// credential source.
const LoginModeAPIKey = "api_key"

func (w *Workload) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if strings.TrimSpace(w.Image) == "" {
		bad("workload.image is empty: set the Harness image (a digest-pinned reference in production)")
	}
	if len(w.Command) == 0 {
		bad("workload.command is empty: give the Harness startup argv")
	}
	for i, arg := range w.Command {
		if arg == "" {
			bad("workload.command[%d] is empty: argv entries must be nonempty", i)
		}
	}
	if w.LoginMode == "" {
		bad("workload.loginMode is empty: the Harness login mode must be explicit (for example %s); drivers never guess it", LoginModeAPIKey)
	}

	names := map[string]bool{}
	for i, e := range w.Env {
		key := fmt.Sprintf("workload.env[%d]", i)
		if msgs := validation.IsEnvVarName(e.Name); e.Name == "" || len(msgs) > 0 {
			bad("%s.name %q is not an environment variable name: use letters, digits, '_', '-' or '.', not starting with a digit", key, e.Name)
		}
		if names[e.Name] {
			bad("%s.name %q repeats an earlier entry: each variable appears once", key, e.Name)
		}
		names[e.Name] = true
		switch {
		case e.Value != nil && e.SecretKeyRef != nil:
			bad("%s (%s) sets both value and secretKeyRef: set exactly one", key, e.Name)
		case e.Value == nil && e.SecretKeyRef == nil:
			bad("%s (%s) sets neither value nor secretKeyRef: set exactly one (value: \"\" for an empty literal)", key, e.Name)
		case e.SecretKeyRef != nil:
			if m := validation.IsDNS1123Subdomain(e.SecretKeyRef.Name); len(m) > 0 {
				bad("%s.secretKeyRef.name %q is not a Secret name (%s)", key, e.SecretKeyRef.Name, m[0])
			}
			if m := validation.IsConfigMapKey(e.SecretKeyRef.Key); len(m) > 0 {
				bad("%s.secretKeyRef.key %q is not a Secret key (%s)", key, e.SecretKeyRef.Key, m[0])
			}
		}
	}

	mountPaths := map[string]bool{}
	for i, m := range w.Mounts {
		key := fmt.Sprintf("workload.mounts[%d]", i)
		if msgs := validation.IsDNS1123Subdomain(m.ClaimName); len(msgs) > 0 {
			bad("%s.claimName %q is not a PersistentVolumeClaim name (%s)", key, m.ClaimName, msgs[0])
		}
		if !exactSubPath(m.SubPath) {
			bad("%s.subPath %q must be an exact relative directory inside the claim: not empty, not the root, not absolute, no '.' or '..' segments", key, m.SubPath)
		}
		if !cleanAbsolute(m.MountPath) || m.MountPath == "/" {
			bad("%s.mountPath %q must be a clean absolute path other than /", key, m.MountPath)
		}
		if mountPaths[m.MountPath] {
			bad("%s.mountPath %q repeats an earlier mount: each path is mounted once", key, m.MountPath)
		}
		mountPaths[m.MountPath] = true
		if m.ReadOnly == nil {
			bad("%s.readOnly is missing: say true or false; a mount's mode is never defaulted", key)
		}
	}

	if sa := w.ServiceAccount; sa != nil {
		if msgs := validation.IsDNS1123Subdomain(sa.Name); len(msgs) > 0 {
			bad("workload.serviceAccount.name %q is not a ServiceAccount name (%s)", sa.Name, msgs[0])
		}
		if t := sa.Token; t != nil {
			if t.Audience == "" {
				bad("workload.serviceAccount.token.audience is empty: name the audience the token is minted for")
			}
			// Kubernetes refuses projected tokens shorter than ten minutes.
			if t.ExpirationSeconds < 600 || t.ExpirationSeconds > 1<<32 {
				bad("workload.serviceAccount.token.expirationSeconds %d must be between 600 and %d", t.ExpirationSeconds, int64(1)<<32)
			}
			if !cleanAbsolute(t.MountPath) || t.MountPath == "/" {
				bad("workload.serviceAccount.token.mountPath %q must be a clean absolute directory other than /", t.MountPath)
			}
			if t.Path == "" || strings.Contains(t.Path, "/") || t.Path == "." || t.Path == ".." {
				bad("workload.serviceAccount.token.path %q must be a plain file name inside mountPath", t.Path)
			}
			if t.ReadOnly == nil {
				bad("workload.serviceAccount.token.readOnly is missing: say true or false")
			}
		}
	}
	return errs
}

func exactSubPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

func cleanAbsolute(p string) bool {
	return strings.HasPrefix(p, "/") && path.Clean(p) == p
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
const LabelHarness = "openclaw.dev/harness"

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
