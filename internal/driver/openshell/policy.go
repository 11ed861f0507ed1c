package openshell

import (
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
)

// Paths of the OpenShell Sandbox layout.
const (
	// RuntimeRoot is the Harness runtime home: a per-revision PVC subpath (never the PVC root)
	// that survives Pod replacement.
	RuntimeRoot = "/sandbox/.openclaw-runtime"
	// RuntimeHome replaces /home/node inside the Sandbox.
	RuntimeHome = RuntimeRoot + "/home"
	// SandboxRoot is the only tree the data mount may live under.
	SandboxRoot = "/sandbox/"
	tmpDir      = "/tmp"
	homeNode    = "/home/node"
)

// baselineReadOnly and baselineReadWrite are OpenShell's permissive runtime baseline, sent
// when policy.filesystem is omitted.
var (
	baselineReadOnly  = []string{"/bin", "/usr", "/lib", "/proc", "/dev/urandom", "/etc", "/var/log", "/app"}
	baselineReadWrite = []string{"/tmp", "/dev/null"}
)

// Enum allowlists. A Go map lookup matches only the exact key, so an inherited or misspelt
// name (the old "passthrough") can never select a value.
var (
	tlsModes = map[string]openshellv1.NetworkTlsMode{
		"skip":      openshellv1.NetworkTlsMode_NETWORK_TLS_MODE_SKIP,
		"terminate": openshellv1.NetworkTlsMode_NETWORK_TLS_MODE_TERMINATE,
	}
	enforcementModes = map[string]openshellv1.NetworkEnforcementMode{
		"enforce": openshellv1.NetworkEnforcementMode_NETWORK_ENFORCEMENT_MODE_ENFORCE,
		"audit":   openshellv1.NetworkEnforcementMode_NETWORK_ENFORCEMENT_MODE_AUDIT,
	}
	accessPresets = map[string]openshellv1.NetworkAccessPreset{
		"read_only":  openshellv1.NetworkAccessPreset_NETWORK_ACCESS_PRESET_READ_ONLY,
		"read_write": openshellv1.NetworkAccessPreset_NETWORK_ACCESS_PRESET_READ_WRITE,
		"full":       openshellv1.NetworkAccessPreset_NETWORK_ACCESS_PRESET_FULL,
	}
	protocols = map[string]bool{"tcp": true, "rest": true, "websocket": true, "graphql": true, "sql": true}
)

// sandboxMount is one mount inside the Sandbox, already placed.
type sandboxMount struct {
	claimName string
	subPath   string
	mountPath string
	readOnly  bool
}

// buildPolicy returns the Sandbox policy: filesystem (the baseline when policy.filesystem is
// omitted, the given lists otherwise, plus every required mount, the runtime root and /tmp),
// Landlock as a hard requirement, the process identity and the binary-scoped network rules
// converted to the wire enums.
func buildPolicy(p installation.PolicyConfig, mounts []sandboxMount) (*openshellv1.SandboxPolicy, error) {
	if p.LandlockCompatibility != nil && *p.LandlockCompatibility != installation.LandlockHardRequirement {
		return nil, plain("OpenShell policy.landlockCompatibility must be hard_requirement or omitted; best_effort is not supported.",
			errorf("policy.landlockCompatibility is %q", *p.LandlockCompatibility))
	}
	if p.Process.RunAsUser == "" || p.Process.RunAsGroup == "" {
		return nil, plain("OpenShell policy.process requires runAsUser and runAsGroup.", nil)
	}
	fs, err := buildFilesystem(p.Filesystem, mounts)
	if err != nil {
		return nil, err
	}
	rules, err := buildNetworkPolicies(p.NetworkPolicies)
	if err != nil {
		return nil, err
	}
	return &openshellv1.SandboxPolicy{
		Version:         1,
		Filesystem:      fs,
		Landlock:        &openshellv1.LandlockPolicy{Compatibility: installation.LandlockHardRequirement},
		Process:         &openshellv1.ProcessPolicy{RunAsUser: p.Process.RunAsUser, RunAsGroup: p.Process.RunAsGroup},
		NetworkPolicies: rules,
	}, nil
}

// exactPath reports whether p is a normalized absolute path other than the root.
func exactPath(p string) bool { return contract.IsExactAbsolutePath(p) }

func buildFilesystem(f *installation.FilesystemPolicy, mounts []sandboxMount) (*openshellv1.FilesystemPolicy, error) {
	var ro, rw []string
	if f == nil {
		ro = slices.Clone(baselineReadOnly)
		rw = slices.Clone(baselineReadWrite)
	} else {
		for i, p := range f.ReadOnly {
			if !exactPath(p) {
				return nil, plain(fmt.Sprintf("OpenShell policy.filesystem.readOnly[%d] must be an exact non-root absolute path.", i), errorf("got %q", p))
			}
			ro = append(ro, p)
		}
		for i, p := range f.ReadWrite {
			if !exactPath(p) {
				return nil, plain(fmt.Sprintf("OpenShell policy.filesystem.readWrite[%d] must be an exact non-root absolute path.", i), errorf("got %q", p))
			}
			rw = append(rw, p)
		}
	}
	// A configured read-write grant on a path Compute approved read-only would let the
	// Harness write where its workload identity may not.
	for _, m := range mounts {
		if !m.readOnly {
			continue
		}
		for _, p := range rw {
			if contract.PathsOverlap(p, m.mountPath) {
				return nil, plain(fmt.Sprintf("OpenShell filesystem policy must not grant read-write access to read-only mount %s.", m.mountPath), nil)
			}
		}
	}
	for _, m := range mounts {
		if m.readOnly {
			ro = append(ro, m.mountPath)
		} else {
			rw = append(rw, m.mountPath)
		}
	}
	rw = append(rw, tmpDir)
	rw = dedupe(rw)
	// A path granted read-write is not also listed read-only: the two lists would otherwise
	// disagree about the same directory.
	ro = slices.DeleteFunc(dedupe(ro), func(p string) bool { return slices.Contains(rw, p) })
	return &openshellv1.FilesystemPolicy{IncludeWorkdir: f.IncludesWorkdir(), ReadOnly: ro, ReadWrite: rw}, nil
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func buildNetworkPolicies(in []installation.NetworkPolicy) (map[string]*openshellv1.NetworkPolicyRule, error) {
	if len(in) == 0 {
		return nil, plain("OpenShell requires at least one sandbox network policy.", nil)
	}
	out := make(map[string]*openshellv1.NetworkPolicyRule, len(in))
	for i, np := range in {
		if strings.TrimSpace(np.Name) == "" {
			return nil, plain("OpenShell network policy name must be a nonempty string.", errorf("policy.networkPolicies[%d].name is empty", i))
		}
		desc := "OpenShell network policy " + np.Name
		if np.Name == contract.ReservedNetworkPolicyName {
			return nil, plain(desc+" uses a reserved name.", errorf("%s is added by the Driver; rename the rule", np.Name))
		}
		if _, dup := out[np.Name]; dup {
			return nil, plain(desc+" is declared more than once.", errorf("network policy names must be unique; rename or merge the rules"))
		}
		if len(np.Binaries) == 0 {
			return nil, plain(desc+" requires at least one binary path.", nil)
		}
		rule := &openshellv1.NetworkPolicyRule{Name: np.Name}
		for j, b := range np.Binaries {
			if strings.TrimSpace(b.Path) == "" {
				return nil, plain(desc+" requires at least one binary path.", errorf("a binary has an empty path"))
			}
			if !contract.IsExactAbsolutePath(b.Path) {
				return nil, plain(desc+" binary path must be an exact absolute path to the executable (for example /usr/bin/git).",
					errorf("policy.networkPolicies[%d].binaries[%d].path is %q: OpenShell matches the running executable's full path, so a bare or relative name matches nothing", i, j, b.Path))
			}
			rule.Binaries = append(rule.Binaries, &openshellv1.NetworkBinary{Path: b.Path})
		}
		if len(np.Endpoints) == 0 {
			return nil, plain(desc+" requires at least one endpoint.", errorf("policy.networkPolicies[%d].endpoints is empty: a rule without one allows nothing", i))
		}
		for _, e := range np.Endpoints {
			ep, err := buildEndpoint(desc, e)
			if err != nil {
				return nil, err
			}
			rule.Endpoints = append(rule.Endpoints, ep)
		}
		out[np.Name] = rule
	}
	return out, nil
}

func buildEndpoint(desc string, e installation.Endpoint) (*openshellv1.NetworkEndpoint, error) {
	if problem := contract.NetworkHostProblem(e.Host); problem != "" {
		return nil, plain(desc+" "+problem+".", errorf("host %q", contract.RedactURL(e.Host)))
	}
	if problem := contract.ModelEndpointProblem(e.Host); problem != "" {
		return nil, plain(problem, errorf("%s endpoint host %q", desc, e.Host))
	}
	ep := &openshellv1.NetworkEndpoint{Host: e.Host}
	if len(e.Ports) == 0 {
		return nil, plain(desc+" endpoint needs at least one port in ports (for example ports: [443]).", errorf("endpoint %s has no ports", e.Host))
	}
	for _, p := range e.Ports {
		if !contract.ValidPort(p) {
			return nil, plain(desc+" port must be a valid TCP port.", errorf("got %d", p))
		}
		ep.Ports = append(ep.Ports, uint32(p))
	}
	protocol := ""
	if e.Protocol != nil {
		protocol = strings.ToLower(*e.Protocol)
		if !protocols[protocol] {
			return nil, plain(desc+" protocol must be one of: tcp, rest, websocket, graphql, sql.", errorf("got %q", *e.Protocol))
		}
		ep.Protocol = protocol
	}
	if e.TLS != nil {
		v, ok := tlsModes[*e.TLS]
		if !ok {
			return nil, plain(desc+" TLS mode must be one of: skip, terminate.", errorf("got %q", *e.TLS))
		}
		ep.Tls = v
	}
	if e.Enforcement != nil {
		v, ok := enforcementModes[*e.Enforcement]
		if !ok {
			return nil, plain(desc+" enforcement mode must be one of: enforce, audit.", errorf("got %q", *e.Enforcement))
		}
		ep.Enforcement = v
	}
	if e.Access != nil {
		v, ok := accessPresets[*e.Access]
		if !ok {
			return nil, plain(desc+" access preset must be one of: read_only, read_write, full.", errorf("got %q", *e.Access))
		}
		ep.Access = v
	}
	// Layer-7 rules: tcp is plain L4 and takes neither access nor enforcement; the other
	// protocols need an access preset; sql is inspected only in audit mode.
	switch {
	case protocol == "tcp" && (e.Access != nil || e.Enforcement != nil):
		return nil, plain(desc+" tcp endpoint takes neither access nor enforcement.", nil)
	case protocol != "" && protocol != "tcp" && e.Access == nil:
		return nil, plain(desc+" "+protocol+" endpoint requires an access preset.", nil)
	case protocol == "sql" && (e.Enforcement == nil || *e.Enforcement != "audit"):
		return nil, plain(desc+" sql endpoint allows only enforcement: audit.", nil)
	}
	return ep, nil
}

// placeMounts validates Compute's approved Harness mounts against the configured data mount and
// returns the Sandbox's mounts: the runtime root first (a per-revision subpath of the data
// mount's claim), then the data mount at its configured path, then the other approved mounts at
// their own paths.
func placeMounts(k installation.KubernetesConfig, approved []driver.WorkspaceMount, revisionID string) ([]sandboxMount, error) {
	dm := k.SandboxDataMount
	if !contract.IsExactSubPath(dm.SubPath) {
		return nil, plain("OpenShell sandboxDataMount must use an exact PVC subpath.", errorf("kubernetes.sandboxDataMount.subPath is %q", dm.SubPath))
	}
	if !strings.HasPrefix(dm.MountPath, SandboxRoot) || !exactPath(dm.MountPath) || dm.MountPath == RuntimeRoot || strings.HasPrefix(dm.MountPath, RuntimeRoot+"/") {
		return nil, plain("OpenShell sandboxDataMount must mount an approved PVC subpath under /sandbox.", errorf("kubernetes.sandboxDataMount.mountPath is %q", dm.MountPath))
	}
	if dm.ReadOnly == nil {
		return nil, plain("OpenShell sandboxDataMount readOnly must be explicit.", nil)
	}
	if contract.OnRuntimeSubPath(dm.SubPath) {
		return nil, plain(contract.MsgRuntimeSubPath, errorf("kubernetes.sandboxDataMount.subPath is %q", dm.SubPath))
	}
	match := -1
	for i, m := range approved {
		if m.ClaimName == "" || !contract.IsExactSubPath(m.SubPath) || !exactPath(m.MountPath) {
			return nil, unsupported("OpenShell requires exact approved PVC subpath mounts.",
				errorf("approved mount %d (claim %q, subPath %q, mountPath %q) must name a claim, an exact subpath and a normalized absolute path", i, m.ClaimName, m.SubPath, m.MountPath))
		}
		if contract.OnRuntimeSubPath(m.SubPath) {
			return nil, unsupported(contract.MsgRuntimeSubPath, errorf("approved mount %d (claim %q, mountPath %q) uses subPath %q", i, m.ClaimName, m.MountPath, m.SubPath))
		}
		if m.SubPath == dm.SubPath && (dm.ClaimName == nil || *dm.ClaimName == m.ClaimName) {
			if match >= 0 {
				match = -2
				break
			}
			match = i
		}
	}
	if match < 0 {
		return nil, plain("OpenShell sandboxDataMount must exactly match one approved Harness workspace mount.",
			errorf("kubernetes.sandboxDataMount.subPath %q matches %s of the revision's approved mounts", dm.SubPath, map[bool]string{true: "none", false: "more than one"}[match == -1]))
	}
	data := approved[match]
	if data.ReadOnly && !*dm.ReadOnly {
		return nil, plain("OpenShell sandboxDataMount must not weaken an approved read-only workspace mount.", nil)
	}
	out := []sandboxMount{
		{claimName: data.ClaimName, subPath: runtimeSubPath(revisionID), mountPath: RuntimeRoot},
		{claimName: data.ClaimName, subPath: data.SubPath, mountPath: dm.MountPath, readOnly: *dm.ReadOnly},
	}
	for i, m := range approved {
		if i == match {
			continue
		}
		out = append(out, sandboxMount{claimName: m.ClaimName, subPath: m.SubPath, mountPath: m.MountPath, readOnly: m.ReadOnly})
	}
	// Overlapping mounts would hide one another, and anything below the runtime root would
	// shadow the Harness's own state; OpenShell also refuses duplicate targets.
	for i := range out {
		for j := range out {
			if i == j {
				continue
			}
			a, b := out[i].mountPath, out[j].mountPath
			if a == b || strings.HasPrefix(b, a+"/") {
				return nil, plain("OpenShell workspace mounts must not overlap beneath the runtime home.", errorf("mount %s overlaps mount %s", b, a))
			}
		}
		if reserved(out[i].mountPath) {
			return nil, unsupported("OpenShell reserves the mount path of an approved Harness mount.", errorf("mount path %s overlaps an OpenShell reserved root", out[i].mountPath))
		}
	}
	return out, nil
}

// reservedRoots are the paths OpenShell keeps for its supervisor and refuses as mount targets.
var reservedRoots = []string{"/opt/openshell", "/etc/openshell", "/etc/openshell-tls", "/run/openshell", "/run/openshell-sidecar", "/run/netns", "/var/run/netns", "/var/run/secrets/openshell"}

func reserved(p string) bool {
	if p == "/sandbox" {
		return true
	}
	for _, r := range reservedRoots {
		if p == r || strings.HasPrefix(p, r+"/") || strings.HasPrefix(r, p+"/") {
			return true
		}
	}
	return false
}
