package driver

// HarnessWorkloadRequirements is the Harness workload Compute derived for a revision, from the
// same Deployment shape its ordinary path would create. A Sandbox driver must either preserve
// every field exactly or refuse the revision; it may never substitute its own choice.
type HarnessWorkloadRequirements struct {
	// Image is the Harness container image (digest-pinned in production).
	Image string `json:"image"`
	// Command is the Harness startup argv.
	Command []string `json:"command,omitempty"`
	// WorkloadIdentity is the Agent ServiceAccount and projected token, or nil when the
	// deployment runs the Harness without a workload credential.
	WorkloadIdentity *WorkloadIdentity `json:"workloadIdentity,omitempty"`
	// Mounts are the PVC subpaths Compute approved for this Harness, with their modes.
	Mounts []WorkspaceMount `json:"mounts,omitempty"`
	// Env is the Harness environment, each entry a literal value or a Secret key reference.
	Env []EnvVar `json:"env,omitempty"`
	// LoginMode is the explicit Harness login mode (for example "api_key" for a revision whose
	// model credential comes from a credential source). Drivers never infer it.
	LoginMode string `json:"loginMode,omitempty"`
	// CredentialAttachments holds one entry per credential source the revision binds, as issued
	// by the paired CredentialGateway; empty otherwise.
	CredentialAttachments []CredentialAttachment `json:"credentialAttachments,omitempty"`
	// Labels are the Agent and revision labels the Harness workload must carry, so Compute can
	// find the exact revision's Pod.
	Labels map[string]string `json:"labels,omitempty"`
}

// WorkloadIdentity is the Agent's Kubernetes identity: a ServiceAccount and the projected token
// the Harness reads.
type WorkloadIdentity struct {
	ServiceAccountName string          `json:"serviceAccountName"`
	Token              *ProjectedToken `json:"token,omitempty"`
}

// ProjectedToken is a projected ServiceAccount token volume.
type ProjectedToken struct {
	Audience          string `json:"audience"`
	ExpirationSeconds int64  `json:"expirationSeconds"`
	// MountPath is the directory the token volume is mounted at; Path is the file inside it.
	MountPath string `json:"mountPath"`
	Path      string `json:"path"`
	ReadOnly  bool   `json:"readOnly"`
}

// WorkspaceMount is one approved PVC subpath mount.
type WorkspaceMount struct {
	// ClaimName is the PersistentVolumeClaim; SubPath the exact directory inside it (never the
	// root, never containing ..).
	ClaimName string `json:"claimName"`
	SubPath   string `json:"subPath"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly"`
}

// EnvVar is one Harness environment entry: exactly one of Value (literal) or SecretKeyRef.
type EnvVar struct {
	Name         string        `json:"name"`
	Value        string        `json:"value,omitempty"`
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty"`
}

// SecretKeyRef names a key of a Secret in the Harness namespace. The value itself never travels
// through the contract.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Literal reports whether the entry carries a literal value rather than a Secret reference.
func (e EnvVar) Literal() bool { return e.SecretKeyRef == nil }

// CredentialAttachment is an opaque attachment issued by a CredentialGateway for one credential
// source. Only the paired Sandbox driver can consume it, and it must apply every one.
type CredentialAttachment struct {
	SourceID string `json:"sourceId"`
	Ref      string `json:"ref"`
}
