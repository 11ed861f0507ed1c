package openshell

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Seed and reference sentences of provisionHarness validation.
const (
	msgOnlyCodexOrOpenClaw   = "OpenShell SandboxDriver supports only dedicated Codex or OpenClaw Harness revisions."
	msgPinnedElsewhere       = "Refusing an AgentRevision pinned to another Sandbox Driver."
	msgOutsideNamespace      = "Refusing to provision a Sandbox outside its selected AgentRevision and Namespace."
	msgManagedProvision      = "OpenShell managed workspace mode is not implemented; cannot provision a Harness."
	msgRevisionUUID          = "OpenShell requires an Agent revision ID containing a stable UUID."
	msgWorkloadIdentity      = "OpenShell cannot preserve an Agent ServiceAccount and projected identity token; disable ServicePrincipal credentials or select another Sandbox Driver."
	msgAppTokenSHA           = "OpenShell dedicated Codex requires one literal APP_TOKEN_SHA verifier."
	msgAppTokenSHAFix        = "Malformed deployment or raw app-server token."
	msgAppServerToken        = "OpenShell dedicated Codex cannot receive APP_SERVER_TOKEN."
	msgAppServerPort         = "OpenShell requires a literal APP_SERVER_PORT for create-time service exposure."
	msgAttachmentNotIssued   = "The Harness requires a credential attachment that this OpenShell Backend did not issue."
	msgStaticProviders       = "OpenShell static providers must be nonempty names outside the OCC credential-source namespace."
	msgNetworkProfile        = "OpenShell requires the provider-fenced network profile on the Harness template."
	msgHarnessLabels         = "OpenShell Harness workload labels must identify the exact Agent revision."
	msgLabelNotAllowed       = "OpenShell Harness workload labels must be allowed Pod labels of the gateway."
	msgEnvironmentLimits     = "OpenShell Harness environment exceeds the gateway's limits."
	msgImage                 = "OpenShell requires the Harness image."
	msgLoginModeDisagreement = "OpenShell Harness login mode disagrees with its environment."
)

// Environment names the driver gives meaning to.
const (
	envAppTokenSHA    = "APP_TOKEN_SHA"
	envAppServerToken = "APP_SERVER_TOKEN"
	envAppServerPort  = "APP_SERVER_PORT"
	envCodexLoginMode = "CODEX_LOGIN_MODE"
	envHome           = "HOME"
	envTmpDir         = "TMPDIR"
	envWorkspaceDir   = "OPENCLAW_WORKSPACE_DIR"
)

// The gateway's request limits, checked before anything is sent, so a request the gateway would
// refuse never consumes an admission.
const (
	maxEnvEntries   = 128
	maxEnvKeyBytes  = 256
	maxEnvValBytes  = 8192
	maxProviders    = contract.MaxSandboxProviders
	maxLogLevelLen  = 32
	maxDriverConfig = 64 << 10
)

// Ephemeral storage of the Agent container, always set: OpenShell's image layer and /tmp share
// it, and an unbounded value would let one Harness exhaust its node.
var (
	ephemeralStorageRequest = resource.MustParse("256Mi")
	ephemeralStorageLimit   = resource.MustParse("1Gi")
)

var appTokenSHA = regexp.MustCompile(`^[a-f0-9]{64}$`)

// RenderCreateSandbox returns the exact CreateSandbox request provisioning would send first for
// hctx, after every check provisioning makes before touching the gateway. It needs no gateway
// and no cluster, and reads no Secret: the request carries only literal values, so printing it
// (`occ sandbox render`) exposes nothing secret. The request_id is the first of the revision's
// deterministic create IDs (the revision UUID). It is exactly the request provisioning sends,
// except for a native OpenClaw or dedicated Codex revision with a workspace-node setup code:
// provisioning then reads the setup Secret and adds the workspace-node-enrollment network rule
// (RenderNotes says so).
func (d *Driver) RenderCreateSandbox(hctx driver.HarnessContext) (*openshellv1.CreateSandboxRequest, error) {
	p, err := d.plan(hctx)
	if err != nil {
		return nil, err
	}
	return p.request(p.requestIDs[0]), nil
}

// MarshalRequestJSON prints a gateway request as stable, indented JSON with the proto field
// names. protojson deliberately varies its whitespace between runs; compacting and
// re-indenting makes the output byte-for-byte reproducible.
func MarshalRequestJSON(req *openshellv1.CreateSandboxRequest) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode CreateSandbox request: %w", err)
	}
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("encode CreateSandbox request: %w", err)
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("encode CreateSandbox request: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// provisionPlan is everything provisioning derived and validated from a HarnessContext.
type provisionPlan struct {
	ref         driver.SandboxResourceRef
	workspace   string
	name        string
	codex       bool
	requestIDs  []string
	spec        *openshellv1.SandboxSpec
	labels      map[string]string
	annotations map[string]string
	exposures   []gateway.ServiceExposure
	revUUID     string
	// runtime is the revision's Harness runtime provider, ensured before the Sandbox; nil for
	// a Harness without runtime files.
	runtime *runtimeProvider
	// enrollment is the revision's workspace-node enrollment, nil without a setup code.
	// Render leaves it unresolved: the setup Secret is read only by ProvisionHarness, which
	// then adds node_setup_json to the runtime provider and the workspace-node-enrollment
	// network rule to the policy.
	enrollment *nodeEnrollment
}

// request builds the wire request for one request_id.
func (p *provisionPlan) request(requestID string) *openshellv1.CreateSandboxRequest {
	return &openshellv1.CreateSandboxRequest{
		Spec:             p.spec,
		Name:             p.name,
		Labels:           maps.Clone(p.labels),
		Annotations:      maps.Clone(p.annotations),
		WorkspaceScope:   &openshellv1.WorkspaceSelector{Selection: &openshellv1.WorkspaceSelector_Workspace{Workspace: p.workspace}},
		RequestId:        requestID,
		ServiceExposures: exposuresToWire(p.exposures),
	}
}

// gatewayRequest is the same request in the client's form; the client chooses the request_id.
func (p *provisionPlan) gatewayRequest() gateway.CreateSandboxRequest {
	return gateway.CreateSandboxRequest{
		Workspace:        p.workspace,
		Name:             p.name,
		Labels:           maps.Clone(p.labels),
		Annotations:      maps.Clone(p.annotations),
		Spec:             p.spec,
		ServiceExposures: slices.Clone(p.exposures),
		RevisionUUID:     p.revUUID,
	}
}

func exposuresToWire(in []gateway.ServiceExposure) []*openshellv1.SandboxServiceExposure {
	var out []*openshellv1.SandboxServiceExposure
	for _, e := range in {
		out = append(out, &openshellv1.SandboxServiceExposure{Service: e.Service, TargetPort: e.TargetPort, AuthorizationMode: e.AuthorizationMode})
	}
	return out
}

// plan validates hctx in the order the refusals matter (what the revision is, whose it is, what
// identity and secrets it carries, then its shape) and builds the request. Every refusal
// happens here, before any gateway call.
func (d *Driver) plan(hctx driver.HarnessContext) (*provisionPlan, error) {
	rev, req := hctx.Revision, hctx.Requirements
	if !d.operator() {
		return nil, plain(msgManagedProvision, nil)
	}
	h := rev.Harness
	if h.Mode != driver.HarnessModeDedicated || (h.ID != driver.HarnessCodex && h.ID != driver.HarnessOpenClaw) {
		return nil, unsupported(msgOnlyCodexOrOpenClaw, errorf("revision %s has harness %q in mode %q", rev.ID, h.ID, h.Mode))
	}
	if err := d.checkNativeContainment(h); err != nil {
		return nil, err
	}
	if err := checkNativeRoster(rev.Configuration, h); err != nil {
		return nil, err
	}
	// A missing image is refused below with its own message; anything else must be a reference.
	if problem := contract.ImageReferenceProblem(req.Image); problem != "" && strings.TrimSpace(req.Image) != "" {
		return nil, plain("The Harness image is not a valid image reference.", errorf("image %q: %s", req.Image, problem))
	}
	if rev.SandboxDriverID != d.id {
		return nil, plain(msgPinnedElsewhere, errorf("revision %s has sandboxDriverId %q; this driver is %q", rev.ID, rev.SandboxDriverID, d.id))
	}
	if rev.NamespaceID != hctx.Namespace.ID {
		return nil, plain(msgOutsideNamespace, errorf("revision %s belongs to Namespace %q, not %q", rev.ID, rev.NamespaceID, hctx.Namespace.ID))
	}
	workspace, err := WorkspaceName(hctx.Namespace.Name)
	if err != nil {
		return nil, err
	}
	revUUID, err := driver.RevisionUUID(rev.ID)
	if err != nil {
		return nil, plain(msgRevisionUUID, err)
	}
	ids, err := gateway.CreateSandboxRequestIDs(revUUID)
	if err != nil {
		return nil, plain(msgRevisionUUID, err)
	}
	if req.WorkloadIdentity != nil {
		return nil, unsupported(msgWorkloadIdentity, errorf("the revision requests ServiceAccount %q", req.WorkloadIdentity.ServiceAccountName))
	}
	codex := h.ID == driver.HarnessCodex
	// The workspace-node setup code is the one Secret reference OpenShell accepts: it goes to
	// the runtime provider, read only at provisioning time, so the literal builder never sees it.
	enrollment, literalEnv, err := planNodeEnrollment(req.Env)
	if err != nil {
		return nil, err
	}
	envReq := req
	envReq.Env = literalEnv
	env, exposures, err := d.buildEnvironment(envReq, codex)
	if err != nil {
		return nil, err
	}
	if err := checkRuntimeFiles(env, codex); err != nil {
		return nil, err
	}
	runtime := planRuntimeProvider(env, codex, workspace, rev)
	if enrollment != nil {
		runtime = enrollment.addTo(runtime, workspace, rev)
	}
	if err := checkHarnessLabels(req.Labels, rev); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Image) == "" {
		return nil, unsupported(msgImage, errorf("requirements.image is empty"))
	}
	providers, err := d.buildProviders(req.CredentialAttachments)
	if err != nil {
		return nil, err
	}
	if providers, err = appendRuntimeProvider(providers, runtime); err != nil {
		return nil, err
	}
	mounts, err := placeMounts(d.cfg.Kubernetes, req.Mounts, rev.ID)
	if err != nil {
		return nil, err
	}
	mounts, relocs, err := relocateHomeMounts(mounts)
	if err != nil {
		return nil, err
	}
	pointEnvAtState(env, relocs)
	command, err := wrapNodeCommand(req.Command, relocs)
	if err != nil {
		return nil, err
	}
	policy, err := buildPolicy(d.cfg.Policy, mounts)
	if err != nil {
		return nil, err
	}
	driverConfig, err := d.buildDriverConfig(mounts)
	if err != nil {
		return nil, err
	}
	name, err := SandboxName(d.cfg.EffectiveSandboxNamePrefix(), rev.ID)
	if err != nil {
		return nil, err
	}
	logLevel := d.cfg.EffectiveLogLevel()
	if len(logLevel) > maxLogLevelLen {
		return nil, plain("OpenShell logLevel must be at most 32 characters.", errorf("logLevel has %d characters", len(logLevel)))
	}
	spec := &openshellv1.SandboxSpec{
		LogLevel:    logLevel,
		Environment: env,
		Template: &openshellv1.SandboxTemplate{
			Image:            req.Image,
			RuntimeClassName: d.cfg.Kubernetes.RuntimeClassName,
			Labels:           maps.Clone(req.Labels),
			UserNamespaces:   d.userNamespaces(h),
			DriverConfig:     driverConfig,
		},
		Policy:    policy,
		Providers: providers,
		Command:   command,
	}
	return &provisionPlan{
		ref:        driver.SandboxResourceRef{NamespaceName: hctx.Namespace.Name, ResourceName: name, AgentID: rev.AgentID, RevisionID: rev.ID},
		workspace:  workspace,
		name:       name,
		codex:      codex,
		requestIDs: ids,
		spec:       spec,
		labels:     maps.Clone(req.Labels),
		annotations: map[string]string{
			driver.AnnotationNamespaceID: rev.NamespaceID,
			driver.AnnotationAgentID:     rev.AgentID,
			driver.AnnotationRevisionID:  rev.ID,
		},
		exposures:  exposures,
		revUUID:    revUUID,
		runtime:    runtime,
		enrollment: enrollment,
	}, nil
}

// checkAppServerToken refuses the raw app-server token in a Codex Harness environment: only
// its SHA-256 verifier may reach the Sandbox. The refusal names the variable, never its value.
func checkAppServerToken(env []driver.EnvVar, codex bool) error {
	if !codex {
		return nil
	}
	for _, e := range env {
		if e.Name == envAppServerToken {
			return secretEnvironment(msgAppServerToken, errorf("remove %s from the Harness environment; only its SHA-256 verifier %s goes into the Sandbox", envAppServerToken, envAppTokenSHA))
		}
	}
	return nil
}

// CheckFrozenEnvironment refuses, when a revision is frozen, a Harness environment this driver
// would refuse to send because it carries a secret: the raw app-server token of dedicated
// Codex. Render and provisioning refuse the same through the same check; freezing refuses it
// too, so the token is never printed as part of a frozen revision.
func (d *Driver) CheckFrozenEnvironment(h driver.Harness, req driver.HarnessWorkloadRequirements) error {
	return checkAppServerToken(req.Env, h.Mode == driver.HarnessModeDedicated && h.ID == driver.HarnessCodex)
}

// buildEnvironment turns the Harness environment into the Sandbox's literal environment and,
// for Codex, the app-server exposure. The Secret-backed app-server token is refused first (the
// regular Harness requirements still carry it, and it must never reach the gateway), then the
// Codex verifier is checked, then any other Secret reference is refused: OpenShell has no Secret
// projection, and resolving the value here would put it in the request. Error details name
// variables, never values.
func (d *Driver) buildEnvironment(req driver.HarnessWorkloadRequirements, codex bool) (map[string]string, []gateway.ServiceExposure, error) {
	if err := checkAppServerToken(req.Env, codex); err != nil {
		return nil, nil, err
	}
	if codex {
		shaCount, shaLiteral := 0, false
		for _, e := range req.Env {
			if e.Name == envAppTokenSHA {
				shaCount++
				shaLiteral = e.Literal() && appTokenSHA.MatchString(e.Value)
			}
		}
		if shaCount != 1 || !shaLiteral {
			found := fmt.Sprintf("found %d entries", shaCount)
			if shaCount == 1 {
				found = "found 1 entry, which is not such a literal"
			}
			return nil, nil, secretEnvironment(msgAppTokenSHA+" "+msgAppTokenSHAFix,
				errorf("%s must appear exactly once as a literal of 64 lowercase hex digits (%s)", envAppTokenSHA, found))
		}
	}
	env := make(map[string]string, len(req.Env)+3)
	seen := make(map[string]bool, len(req.Env))
	for _, e := range req.Env {
		if !e.Literal() {
			return nil, nil, secretEnvironment(fmt.Sprintf("OpenShell cannot receive secretKeyRef environment %s.", e.Name),
				errorf("upstream Secret projection support is required; deliver the value through a credential source instead"))
		}
		if e.Name == "" || len(e.Name) > maxEnvKeyBytes || len(e.Value) > maxEnvValBytes {
			return nil, nil, plain(msgEnvironmentLimits, errorf("variable %q must have a 1 to %d byte name and a value of at most %d bytes", e.Name, maxEnvKeyBytes, maxEnvValBytes))
		}
		if seen[e.Name] {
			return nil, nil, plain(msgEnvironmentLimits, errorf("variable %s is listed more than once", e.Name))
		}
		seen[e.Name] = true
		env[e.Name] = relocateHome(e.Value)
	}
	if codex && req.LoginMode != "" {
		if v, ok := env[envCodexLoginMode]; ok && v != req.LoginMode {
			return nil, nil, plain(msgLoginModeDisagreement, errorf("%s is %q but the prepared login mode is %q", envCodexLoginMode, v, req.LoginMode))
		}
		env[envCodexLoginMode] = req.LoginMode
	}
	// The Sandbox's writable home is the per-revision runtime root, not the image's /home/node,
	// and the workspace is the data mount; these always win over the Deployment-shaped values.
	env[envHome] = RuntimeHome
	env[envTmpDir] = tmpDir
	env[envWorkspaceDir] = d.DataMountPath()
	if len(env) > maxEnvEntries {
		return nil, nil, plain(msgEnvironmentLimits, errorf("%d variables; the gateway accepts at most %d", len(env), maxEnvEntries))
	}
	var exposures []gateway.ServiceExposure
	if codex {
		port, err := strconv.ParseUint(env[envAppServerPort], 10, 16)
		if err != nil || port == 0 {
			return nil, nil, plain(msgAppServerPort, errorf("%s must be a literal TCP port (1-65535)", envAppServerPort))
		}
		// One unnamed exposure, with the caller's Authorization forwarded: the app-server checks
		// the bearer token itself against APP_TOKEN_SHA.
		exposures = []gateway.ServiceExposure{{
			Service:           "",
			TargetPort:        uint32(port),
			AuthorizationMode: gateway.AuthorizationBearerPassthrough,
		}}
	}
	return env, exposures, nil
}

// Codex plugin-runtime files, delivered to the Harness as literal environment values.
const (
	envRuntimeManifest  = "OPENCLAW_PLUGIN_RUNTIME_MANIFEST"
	envCodexConfigTOML  = "OPENCLAW_PLUGIN_CODEX_CONFIG_TOML"
	maxRuntimeFileBytes = 65536
)

// runtimeManifest is the part of the Codex plugin-runtime manifest the driver checks.
type runtimeManifest struct {
	Kind                          string          `json:"kind"`
	Selections                    json.RawMessage `json:"selections"`
	RepositoryBrokerNetworkPolicy json.RawMessage `json:"repositoryBrokerNetworkPolicy"`
}

// checkRuntimeFiles requires dedicated Codex's exact bounded plugin-runtime files and a
// plugin-free manifest: selected plugins and repository credentials need egress and Secrets
// that OpenShell's policy for this revision does not grant. OpenClaw must not receive them.
func checkRuntimeFiles(env map[string]string, codex bool) error {
	manifest, hasManifest := env[envRuntimeManifest]
	toml, hasTOML := env[envCodexConfigTOML]
	if !codex {
		if hasManifest || hasTOML {
			return unsupported("OpenShell dedicated OpenClaw cannot receive Codex plugin-runtime files.", errorf("remove %s and %s", envRuntimeManifest, envCodexConfigTOML))
		}
		return nil
	}
	if manifest == "" || toml == "" || len(manifest) > maxRuntimeFileBytes || len(toml) > maxRuntimeFileBytes {
		return unsupported("OpenShell dedicated Codex requires its exact bounded plugin-runtime files.",
			errorf("%s and %s must both be literal, nonempty and at most %d bytes", envRuntimeManifest, envCodexConfigTOML, maxRuntimeFileBytes))
	}
	var m runtimeManifest
	dec := json.NewDecoder(strings.NewReader(manifest))
	if err := dec.Decode(&m); err != nil || dec.More() {
		return unsupported("OpenShell dedicated Codex requires a valid plugin-runtime manifest.", errorf("%s is not one JSON object", envRuntimeManifest))
	}
	sel := strings.TrimSpace(string(m.Selections))
	broker := strings.TrimSpace(string(m.RepositoryBrokerNetworkPolicy))
	if m.Kind != driver.HarnessCodex || (sel != "" && sel != "[]" && sel != "null") || (broker != "" && broker != "null") {
		return unsupported("OpenShell dedicated Codex does not yet support selected plugins or repository credentials.",
			errorf("Deploy a plugin-free Agent revision without repository bindings"))
	}
	return nil
}

// relocateHome rewrites a /home/node path to the Sandbox's runtime home.
func relocateHome(v string) string {
	if v == homeNode {
		return RuntimeHome
	}
	if rest, ok := strings.CutPrefix(v, homeNode+"/"); ok {
		return RuntimeHome + "/" + rest
	}
	return v
}

func checkHarnessLabels(labels map[string]string, rev driver.Revision) error {
	if len(labels) == 0 {
		return plain("OpenShell Harness workload labels must contain at least one label.", nil)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return plain("OpenShell Harness workload labels key must be a nonempty string.", errorf("label key %q: %s", k, strings.Join(errs, "; ")))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 || v == "" {
			return plain(fmt.Sprintf("OpenShell Harness workload labels.%s must be a nonempty string.", k), errorf("label value %q is not a valid nonempty label value", v))
		}
		if !contract.AllowedPodLabel(k) {
			return plain(msgLabelNotAllowed, errorf("label %s is outside openclaw.dev/*, app.kubernetes.io/name and app.kubernetes.io/managed-by", k))
		}
	}
	if labels[driver.LabelAgent] != rev.AgentID || labels[driver.LabelRevision] != rev.ID {
		return plain(msgHarnessLabels, errorf("labels %s=%q and %s=%q must equal the revision's Agent %q and ID %q",
			driver.LabelAgent, labels[driver.LabelAgent], driver.LabelRevision, labels[driver.LabelRevision], rev.AgentID, rev.ID))
	}
	if labels[driver.LabelNetworkProfile] != driver.NetworkProfileProviderFenced {
		return plain(msgNetworkProfile, errorf("label %s is %q; Compute must pass %q so none of its ordinary egress grants apply to the Harness",
			driver.LabelNetworkProfile, labels[driver.LabelNetworkProfile], driver.NetworkProfileProviderFenced))
	}
	return nil
}

// buildProviders is the static providers followed by one provider per credential attachment.
// An attachment is accepted only if its ref is the provider name this Backend's Credential
// Gateway derives for its source: anything else was issued by someone else (or forged), and
// applying it could hand the Harness another tenant's credential.
func (d *Driver) buildProviders(attachments []driver.CredentialAttachment) ([]string, error) {
	out := make([]string, 0, len(d.cfg.Providers)+len(attachments))
	seen := map[string]bool{}
	for _, p := range d.cfg.Providers {
		if problem := contract.StaticProviderProblem(p); problem != "" || seen[p] {
			if problem == "" {
				problem = "It is listed more than once."
			}
			return nil, plain(msgStaticProviders+" "+problem, errorf("providers entry %q", p))
		}
		seen[p] = true
		out = append(out, p)
	}
	for _, a := range attachments {
		if !IsCredentialProviderName(a.Ref) || a.Ref != CredentialProviderName(a.SourceID) || seen[a.Ref] {
			return nil, plain(msgAttachmentNotIssued, errorf("credential source %q has attachment ref %q", a.SourceID, a.Ref))
		}
		seen[a.Ref] = true
		out = append(out, a.Ref)
	}
	if len(out) > maxProviders {
		return nil, plain("OpenShell accepts at most 32 providers per Sandbox.", errorf("%d providers requested", len(out)))
	}
	return out, nil
}

// Typed shape of template.driver_config.kubernetes (OpenShell's KubernetesSandboxDriverConfig:
// snake_case keys, unknown keys refused by the gateway).
type kubernetesDriverConfig struct {
	Pod        podDriverConfig        `json:"pod"`
	Containers containersDriverConfig `json:"containers"`
	Volumes    []volumeDriverConfig   `json:"volumes"`
}

type podDriverConfig struct {
	RuntimeClassName string `json:"runtime_class_name"`
}

type containersDriverConfig struct {
	Agent agentContainerDriverConfig `json:"agent"`
}

type agentContainerDriverConfig struct {
	Resources    resourcesDriverConfig     `json:"resources"`
	VolumeMounts []volumeMountDriverConfig `json:"volume_mounts"`
}

type resourcesDriverConfig struct {
	Requests map[string]string `json:"requests"`
	Limits   map[string]string `json:"limits"`
}

type volumeMountDriverConfig struct {
	Name      string `json:"name"`
	MountPath string `json:"mount_path"`
	SubPath   string `json:"sub_path"`
	ReadOnly  bool   `json:"read_only"`
}

type volumeDriverConfig struct {
	Name                  string          `json:"name"`
	PersistentVolumeClaim pvcDriverConfig `json:"persistent_volume_claim"`
}

type pvcDriverConfig struct {
	ClaimName string `json:"claim_name"`
	ReadOnly  bool   `json:"read_only"`
}

// buildDriverConfig renders the Kubernetes driver config: the RuntimeClass, the Agent
// container's resources with ephemeral storage forced to 256Mi/1Gi, and one PVC volume per claim
// with the approved subpath mounts. A volume is read-write only if one of its mounts is, since
// OpenShell needs read_only:false on both for a writable mount.
func (d *Driver) buildDriverConfig(mounts []sandboxMount) (*structpb.Struct, error) {
	k := d.cfg.Kubernetes
	if strings.TrimSpace(k.RuntimeClassName) == "" {
		return nil, plain("OpenShell kubernetes.runtimeClassName must be a nonempty string.", nil)
	}
	res := resourcesDriverConfig{Requests: map[string]string{}, Limits: map[string]string{}}
	if k.AgentResources != nil {
		res.Requests = quantities(k.AgentResources.Requests)
		res.Limits = quantities(k.AgentResources.Limits)
	}
	res.Requests[string(corev1.ResourceEphemeralStorage)] = ephemeralStorageRequest.String()
	res.Limits[string(corev1.ResourceEphemeralStorage)] = ephemeralStorageLimit.String()

	cfg := kubernetesDriverConfig{Pod: podDriverConfig{RuntimeClassName: k.RuntimeClassName}}
	cfg.Containers.Agent.Resources = res
	volumeIndex := map[string]int{}
	for _, m := range mounts {
		name := volumeName(m.claimName)
		i, ok := volumeIndex[m.claimName]
		if !ok {
			i = len(cfg.Volumes)
			volumeIndex[m.claimName] = i
			cfg.Volumes = append(cfg.Volumes, volumeDriverConfig{Name: name, PersistentVolumeClaim: pvcDriverConfig{ClaimName: m.claimName, ReadOnly: true}})
		}
		if !m.readOnly {
			cfg.Volumes[i].PersistentVolumeClaim.ReadOnly = false
		}
		cfg.Containers.Agent.VolumeMounts = append(cfg.Containers.Agent.VolumeMounts,
			volumeMountDriverConfig{Name: name, MountPath: m.mountPath, SubPath: m.subPath, ReadOnly: m.readOnly})
	}
	raw, err := json.Marshal(map[string]kubernetesDriverConfig{"kubernetes": cfg})
	if err != nil {
		return nil, fmt.Errorf("encode Kubernetes driver config: %w", err)
	}
	if len(raw) > maxDriverConfig {
		return nil, plain("OpenShell Kubernetes driver config exceeds 64 KiB.", errorf("%d bytes", len(raw)))
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, fmt.Errorf("encode Kubernetes driver config: %w", err)
	}
	s, err := structpb.NewStruct(generic)
	if err != nil {
		return nil, fmt.Errorf("encode Kubernetes driver config: %w", err)
	}
	return s, nil
}

func quantities(l corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(l))
	for name, q := range l {
		out[string(name)] = q.String()
	}
	return out
}
