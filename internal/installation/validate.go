package installation

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/strictyaml"
)

// The OpenShell SandboxDriver's rules in OCE's own sentences, quoted verbatim in the messages
// that enforce them.
const (
	msgComputeRequired   = "drivers.sandbox requires the bundled Kubernetes Compute Driver."
	msgBackendRequired   = "The bundled OpenShell drivers.sandbox requires a backend entry with type openshell."
	msgSelection         = "Select drivers.sandbox in Installation YAML with bundled Kubernetes Compute; installed Compute Drivers fail startup. Its openshell Backend must match this ID and the Credential Gateway."
	msgLandlock          = "The Driver requires hard_requirement for Landlock filesystem enforcement. Omit policy.landlockCompatibility or set it to hard_requirement; any other value, including best_effort, fails Installation startup."
	msgProcess           = "The Driver requires policy.process.runAsUser and runAsGroup, but the pinned OpenShell ignores them: every Sandbox process runs as the workload identity, default 10001:10001."
	msgUniqueNames       = "The pinned OpenShell " + contract.PinnedOpenShellVersion + " requires unique network policy names and nonempty executable paths."
	msgReserved          = "workspace-node-enrollment is reserved."
	msgOptions           = "Options are tls: skip|terminate, enforcement: enforce|audit, and access: read_only|read_write|full; skip replaces the rejected passthrough spelling."
	msgProtocol          = "An endpoint protocol is tcp, rest, websocket, graphql or sql in any case (OCE sends it lowercase), or omitted."
	msgProtocolOptions   = "tcp takes neither access nor enforcement; the other protocols need access, and sql allows only enforcement: audit."
	msgProtocolRefused   = "json-rpc and mcp need rules this setting cannot express, so startup refuses them."
	msgServiceAccount    = "gatewayConfigured is the only ServiceAccount mode; the gateway's configured sandbox ServiceAccount applies to every Sandbox and does not satisfy the per-Agent production requirement."
	msgReadiness         = "Optional readiness observes a Service and Pods in the OCC namespace (a paired Gateway normally uses a Backend endpoint). It needs a positive timeoutMs; pollIntervalMs (default 1000) is at most 2147483647."
	msgWorkspaceMode     = "Required gateway.workspaceMode accepts operator or managed; deferred managed mode fails before Kubernetes mutations or Gateway calls."
	msgWorkspaceObjects  = "gateway.operatorWorkspaceResources accepts the namespace-scoped ServiceAccount, Role, RoleBinding, and NetworkPolicy objects rendered from the workspace chart. The Driver injects the Compute-owned namespace and OCC ownership metadata before server-side apply. Only operator mode applies it; never include Secrets or cluster-scoped objects."
	msgNetworkObjects    = "gateway.networkPolicyResources accepts namespace-scoped Kubernetes objects for provider networking, applied during ensureNamespace. Secrets are rejected; OpenShell credentials must not appear in startup YAML."
	msgDataMount         = "kubernetes.sandboxDataMount must match exactly one approved dedicated Harness workspace mount. It may not mount the PVC root or use .., and must mount under /sandbox/."
	msgStaticProviders   = "OpenShell static providers must be nonempty names outside the OCC credential-source namespace."
	msgUnknownKeys       = "Startup refuses an unknown key in kubernetes, kubernetes.serviceAccount, kubernetes.sandboxDataMount, kubernetes.agentResources, policy, policy.process and gateway.readiness, so a misspelled key never falls back to its default."
	msgNamePrefixTooLong = "Sandbox name prefix is too long for OpenShell's 19-character limit."
)

// Rules the Installation validator and the driver's render share, in the words both use.
const (
	msgBinaryPath    = "binary path must be an exact absolute path to the executable (for example /usr/bin/git): OpenShell matches the running executable's full path, so a bare or relative name matches nothing."
	msgPortsRequired = "endpoint needs at least one port in ports (for example ports: [443]); an endpoint without ports cannot be enforced as written."
)

// Paths of the blocks occ owns.
const (
	pathSandbox   = "drivers.sandbox"
	pathConfig    = "drivers.sandbox.configuration"
	pathGateway   = pathConfig + ".gateway"
	pathK8s       = pathConfig + ".kubernetes"
	pathPolicy    = pathConfig + ".policy"
	pathCompute   = "drivers.compute"
	pathCredGW    = "drivers.credential_gateway"
	maxSafeInt    = 1<<53 - 1
	maxInt32      = math.MaxInt32
	maxStartupMs  = 120000
	minRequestMs  = 1000
	maxRequestMs  = 30000
	maxPrefixSize = 2
	// maxStaticProviders leaves room for a revision's runtime provider.
	maxStaticProviders = contract.MaxSandboxProviders - 1
)

// sandboxNamePrefixPattern keeps the prefix valid as the start of a DNS-1123 Sandbox name.
var sandboxNamePrefixPattern = regexp.MustCompile(`^[a-z0-9]+$`)

// Validate applies the OpenShell SandboxDriver rules and returns
// every problem found, in document order. It does not stop at the first problem.
func (in *Installation) Validate() Problems {
	v := &validator{strictyaml.NewReport(in.source, in.failed, contract.RedactURL)}
	v.installation(in)
	return Problems(v.Problems)
}

// validator applies the rules to a model, reporting into the shared strict-YAML report (which
// adds lines and skips values decoding already refused).
type validator struct{ *strictyaml.Report }

func (v *validator) add(p Problem)                { v.Add(p) }
func (v *validator) bad(path, value, rule string) { v.Bad(path, value, rule) }
func (v *validator) missing(path, rule string)    { v.Missing(path, rule) }
func (v *validator) object(path, kindName, rule string) {
	v.Object(path, kindName, rule)
}
func (v *validator) decodeFailed(p string) bool { return v.DecodeFailed(p) }

func (v *validator) installation(in *Installation) {
	v.backends(in)
	sandbox := in.Drivers.Sandbox
	if sandbox == nil {
		v.missing(pathSandbox, "occ drives the OpenShell SandboxDriver, so the Installation must select drivers.sandbox. "+msgSelection)
	}
	if c := in.Drivers.Compute; c == nil {
		v.missing(pathCompute, msgComputeRequired+" Set drivers.compute.id to "+ComputeKubernetesID+". "+msgSelection)
	} else if c.ID != ComputeKubernetesID {
		v.selectionProblem(pathCompute+".id", c.ID, msgComputeRequired+" Set drivers.compute.id to "+ComputeKubernetesID+"; installed Compute Drivers fail startup.")
	} else {
		v.sessionCapacity(in)
	}
	if sandbox != nil {
		v.requiredID(pathSandbox+".id", sandbox.ID, "drivers.sandbox needs the id its openshell Backend names in drivers.sandbox.")
		v.sandboxConfiguration(&sandbox.Configuration)
	}
	v.credentialGateway(in)
}

// idOr is id, or placeholder when it is empty, so a message never suggests an empty id.
func idOr(id, placeholder string) string {
	if id == "" {
		return placeholder
	}
	return id
}

func (v *validator) selectionProblem(path, value, rule string) {
	if value == "" {
		v.missing(path, rule)
		return
	}
	v.bad(path, value, rule)
}

func (v *validator) requiredID(path, id, rule string) {
	switch {
	case id == "":
		v.missing(path, "an id is required: "+rule)
	case strings.TrimSpace(id) != id || strings.ContainsAny(id, " \t\r\n"):
		v.bad(path, id, "an id may not contain whitespace: "+rule)
	}
}

// backends checks the backend list: unique ids, and exactly one openshell entry that pairs
// drivers.sandbox with drivers.credential_gateway.
func (v *validator) backends(in *Installation) {
	ids := map[string]string{}
	var openshell []int
	for i, b := range in.Backend {
		p := indexPath("backend", i)
		id := ""
		switch {
		case b.OpenShell != nil:
			id = b.OpenShell.ID
			openshell = append(openshell, i)
		case b.Raw != nil:
			if n := mappingValue(b.Raw, "id"); n != nil {
				id = n.Value
			}
		}
		if id == "" {
			continue
		}
		if first, dup := ids[id]; dup {
			v.bad(p+".id", id, fmt.Sprintf("backend ids must be unique; %s already uses this id", first))
			continue
		}
		ids[id] = p
	}
	if in.Drivers.Sandbox == nil {
		for _, i := range openshell {
			v.openShellBackend(indexPath("backend", i), in.Backend[i].OpenShell, in)
		}
		return
	}
	if len(openshell) == 0 {
		if !v.decodeFailed("backend") {
			where := "no entry of type openshell"
			line := v.Line("backend")
			if line > 0 {
				where = fmt.Sprintf("line %d, no entry of type openshell", line)
			}
			v.add(Problem{Path: "backend", Line: line, Message: "backend (" + where + "): " + msgBackendRequired + " Add {id: openshell, type: openshell, configuration: {endpoint: …}, drivers: {sandbox: " + idOr(in.SandboxDriverID(), "<drivers.sandbox.id>") + ", credential_gateway: …}}."})
		}
		return
	}
	for n, i := range openshell {
		p := indexPath("backend", i)
		if n > 0 {
			v.bad(p+".type", BackendTypeOpenShell, fmt.Sprintf("only one backend entry of type openshell may pair drivers.sandbox; %s is the first. Remove the extra entry.", indexPath("backend", openshell[0])))
		}
		v.openShellBackend(p, in.Backend[i].OpenShell, in)
	}
}

func (v *validator) openShellBackend(p string, b *OpenShellBackend, in *Installation) {
	v.requiredID(p+".id", b.ID, "every backend entry needs an id.")
	c := &b.Configuration
	cp := p + ".configuration"
	switch {
	case c.Endpoint == nil && c.ServiceName == nil:
		v.missing(cp+".endpoint", "The OpenShell Backend requires an endpoint or a gateway Service name. Set configuration.endpoint (for example http://k3d-occ-dev-server-0:30051) or configuration.serviceName.")
	case c.Endpoint != nil && c.ServiceName != nil:
		v.bad(cp+".serviceName", *c.ServiceName, "configuration.endpoint and configuration.serviceName are alternatives; keep exactly one.")
	}
	tls := false
	if c.Endpoint != nil {
		tls = v.endpoint(cp+".endpoint", *c.Endpoint) == "https"
		if c.Scheme != nil {
			v.bad(cp+".scheme", *c.Scheme, "scheme goes with serviceName; with endpoint, put the scheme in the endpoint URL.")
		}
		if c.Port != nil {
			v.bad(cp+".port", strconv.FormatInt(*c.Port, 10), "port goes with serviceName; with endpoint, put the port in the endpoint URL.")
		}
	}
	if c.ServiceName != nil {
		if errs := validation.IsDNS1123Subdomain(*c.ServiceName); len(errs) > 0 {
			v.bad(cp+".serviceName", *c.ServiceName, "serviceName must be the gateway's Kubernetes Service name (a DNS-1123 name such as openshell-gateway): "+strings.Join(errs, "; "))
		}
		if c.Scheme != nil {
			switch *c.Scheme {
			case "http":
			case "https":
				tls = true
			default:
				v.bad(cp+".scheme", *c.Scheme, "scheme must be http or https.")
			}
		}
		if c.Port != nil && (*c.Port < 1 || *c.Port > 65535) {
			v.bad(cp+".port", strconv.FormatInt(*c.Port, 10), fmt.Sprintf("port must be a TCP port from 1 to 65535 (default %d).", DefaultGatewayPort))
		}
	}
	if c.RootCertificatePath != nil {
		tls = true
		if !isExactAbsolutePath(*c.RootCertificatePath) {
			v.bad(cp+".rootCertificatePath", *c.RootCertificatePath, "rootCertificatePath must be an exact absolute path to the PEM CA bundle that signs the gateway's certificate.")
		}
	}
	bearer := false
	if a := c.Auth; a != nil {
		ap := cp + ".auth"
		switch a.Mode {
		case AuthModeUnauthenticated:
			if a.Path != nil {
				v.bad(ap+".path", *a.Path, "auth mode unauthenticated takes no token path; remove path or use mode bearerTokenFile.")
			}
		case AuthModeBearerTokenFile:
			bearer = true
			if a.Path == nil {
				v.missing(ap+".path", "auth mode bearerTokenFile needs path, the absolute path of a one-line token file.")
			} else if !isExactAbsolutePath(*a.Path) {
				v.bad(ap+".path", *a.Path, "the bearer token file path must be an exact absolute path.")
			}
		case "":
			v.missing(ap+".mode", "auth needs mode: unauthenticated or bearerTokenFile.")
		default:
			v.bad(ap+".mode", a.Mode, "auth mode must be unauthenticated or bearerTokenFile.")
		}
	}
	if c.RequestTimeoutMs != nil && (*c.RequestTimeoutMs < minRequestMs || *c.RequestTimeoutMs > maxRequestMs) {
		v.bad(cp+".requestTimeoutMs", strconv.FormatInt(*c.RequestTimeoutMs, 10), fmt.Sprintf("requestTimeoutMs must be from %d to %d milliseconds.", minRequestMs, maxRequestMs))
	}
	if bearer && !tls && c.Endpoint != nil {
		// occ never sends the token in clear text, so the link could never be used; and
		// insecureTransport, the other way to accept plaintext, is refused beside a token.
		v.bad(cp+".endpoint", contract.RedactURL(*c.Endpoint), MsgBearerNeedsTLS)
	} else if bearer && !tls && c.ServiceName != nil {
		v.bad(cp+".scheme", schemeOf(c.Scheme), MsgBearerNeedsTLS)
	}
	switch {
	case c.InsecureTransport != nil && *c.InsecureTransport != InsecureTransportNetworkPolicy:
		v.bad(cp+".insecureTransport", *c.InsecureTransport, "insecureTransport accepts only network-policy, the acknowledgement that NetworkPolicies alone protect a link without TLS or a bearer token.")
	case c.InsecureTransport == nil && !tls && !bearer && (c.Endpoint != nil || c.ServiceName != nil):
		v.missing(cp+".insecureTransport", "the gateway link has neither TLS nor a bearer token, so insecureTransport: network-policy is required to acknowledge that only NetworkPolicies protect it (development only).")
	case c.InsecureTransport != nil && (tls || bearer):
		v.bad(cp+".insecureTransport", *c.InsecureTransport, "insecureTransport is rejected when the link uses TLS or a bearer token; remove it.")
	}

	dp := p + ".drivers"
	if sandbox := in.Drivers.Sandbox; sandbox != nil && b.Drivers.Sandbox != sandbox.ID {
		fix := fmt.Sprintf("Set it to %q, the id of drivers.sandbox.", sandbox.ID)
		if sandbox.ID == "" {
			fix = "drivers.sandbox has no id yet: give drivers.sandbox the id this Backend names (for example sandbox-openshell-development), and keep the two equal."
		}
		v.selectionProblem(dp+".sandbox", b.Drivers.Sandbox, fmt.Sprintf("The OpenShell Backend does not declare this Sandbox Driver as a member. %s %s", fix, msgSelection))
	} else if in.Drivers.Sandbox == nil && b.Drivers.Sandbox == "" {
		v.missing(dp+".sandbox", "the openshell Backend must name the Sandbox Driver it pairs.")
	}
	if cg := in.Drivers.CredentialGateway; cg != nil && b.Drivers.CredentialGateway != cg.ID {
		fix := fmt.Sprintf("set it to %q, the id of drivers.credential_gateway.", cg.ID)
		if cg.ID == "" {
			fix = "drivers.credential_gateway has no id yet: give drivers.credential_gateway the id this Backend names (for example credential-gateway-openshell-development), and keep the two equal."
		}
		v.selectionProblem(dp+".credential_gateway", b.Drivers.CredentialGateway, fmt.Sprintf("the openshell Backend must name the Credential Gateway it pairs with the Sandbox; %s %s", fix, msgSelection))
	} else if cg == nil && b.Drivers.CredentialGateway == "" {
		v.missing(dp+".credential_gateway", "the openshell Backend must name the Credential Gateway it pairs with the Sandbox.")
	}
}

// MsgCredentialsBelong says where the gateway credential goes instead of the endpoint URL; every
// refusal of a credential-bearing gateway endpoint ends with it. A token needs TLS
// (MsgBearerNeedsTLS), so the advice says so rather than send a plaintext link round in circles.
const MsgCredentialsBelong = "Remove it from the endpoint and authenticate with a token file instead (auth.bearerTokenFile: auth: {mode: bearerTokenFile, path: /absolute/path/to/token} on the openshell Backend's configuration), over an https:// endpoint: a bearer token needs TLS."

// MsgBearerNeedsTLS is the refusal of a bearer token over a plaintext gateway link. It names only
// fixes validation accepts: insecureTransport is refused beside a token, so it is offered only
// with the token dropped.
const MsgBearerNeedsTLS = "a bearer token needs TLS: occ never sends it over plaintext, so this link could not be used. Use an https:// endpoint (with serviceName, scheme: https), adding rootCertificatePath when a private CA signs the gateway's certificate; or, for a development link that only NetworkPolicies protect, use auth mode unauthenticated with insecureTransport: network-policy."

// schemeOf is a serviceName link's scheme as written, "http" when omitted (the default).
func schemeOf(s *string) string {
	if s == nil {
		return "http"
	}
	return *s
}

// endpoint checks a gateway endpoint: an http(s) origin without credentials, path, query or
// fragment, or a bare host:port. It returns the scheme ("http" for host:port), or "" when the
// endpoint is unusable. Credentials are refused before anything else and never shown: the value
// in the problem has them redacted.
func (v *validator) endpoint(p, e string) string {
	const rule = "endpoint must be an http or https origin without credentials, path, query or fragment (for example http://k3d-occ-dev-server-0:30051), or a bare host:port."
	if e == "" {
		v.bad(p, e, rule)
		return ""
	}
	if part := contract.CredentialPart(e); part != "" {
		v.bad(p, e, rule+" It carries "+part+", where a credential would sit; occ never keeps such a URL in the Installation, prints it or sends it on. "+MsgCredentialsBelong)
		// The scheme still decides whether the link is TLS, so the credential is the one
		// problem reported, not a missing insecureTransport on top of it.
		scheme := "http"
		if i := strings.Index(e, "://"); i >= 0 {
			scheme = strings.ToLower(e[:i])
		}
		return scheme
	}
	if !strings.Contains(e, "://") {
		host, port, err := net.SplitHostPort(e)
		if err != nil || host == "" || !validPort(port) {
			v.bad(p, e, rule)
			return ""
		}
		return "http"
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		v.bad(p, e, rule)
		return ""
	}
	if port := u.Port(); port != "" && !validPort(port) {
		v.bad(p, e, rule+" The port must be from 1 to 65535.")
		return ""
	}
	return u.Scheme
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == s
}

func (v *validator) credentialGateway(in *Installation) {
	cg := in.Drivers.CredentialGateway
	if cg == nil {
		if in.Drivers.Sandbox != nil {
			v.missing(pathCredGW, "the openshell Backend pairs drivers.sandbox with the OpenShell Credential Gateway, which delivers model credentials; add drivers.credential_gateway with its id and configuration.binaries.")
		}
		return
	}
	v.requiredID(pathCredGW+".id", cg.ID, "the openshell Backend names it in drivers.credential_gateway.")
	bp := pathCredGW + ".configuration.binaries"
	if len(cg.Configuration.Binaries) == 0 {
		v.missing(bp, "the Credential Gateway configuration is a non-empty list of absolute executable paths allowed to use delivered credentials (for example /usr/local/bin/codex).")
		return
	}
	seen := map[string]int{}
	for i, b := range cg.Configuration.Binaries {
		p := indexPath(bp, i)
		if !isExactAbsolutePath(b) {
			v.bad(p, b, "each Credential Gateway binary must be a non-empty exact absolute path to an executable."+contract.PathHint(b))
			continue
		}
		if first, dup := seen[b]; dup {
			v.bad(p, b, fmt.Sprintf("duplicate of %s; list each binary once.", indexPath(bp, first)))
			continue
		}
		seen[b] = i
	}
}

func (v *validator) sandboxConfiguration(c *SandboxConfiguration) {
	if c.StartupDelayMs != nil && (*c.StartupDelayMs < 1 || *c.StartupDelayMs > maxStartupMs) {
		v.bad(pathConfig+".startupDelayMs", strconv.FormatInt(*c.StartupDelayMs, 10), "OpenShell startupDelayMs must be a positive safe integer no greater than 120000. Development retains the 30-second startupDelayMs.")
	}
	if c.SandboxNamePrefix != nil {
		p, prefix := pathConfig+".sandboxNamePrefix", *c.SandboxNamePrefix
		switch {
		case prefix == "":
			v.bad(p, prefix, "sandboxNamePrefix must not be empty; omit it for the default "+DefaultSandboxNamePrefix+".")
		case len(prefix) > maxPrefixSize:
			v.bad(p, prefix, msgNamePrefixTooLong+" Use at most 2 characters (the name adds a hyphen and a 16-character digest).")
		case !sandboxNamePrefixPattern.MatchString(prefix):
			v.bad(p, prefix, "sandboxNamePrefix must be lowercase letters and digits, because it starts a DNS-1123 Sandbox name.")
		}
	}
	if c.LogLevel != nil {
		switch *c.LogLevel {
		case "trace", "debug", "info", "warn", "error":
		default:
			v.bad(pathConfig+".logLevel", *c.LogLevel, "logLevel must be one of trace, debug, info, warn, error (default info).")
		}
	}
	v.providers(c.Providers)
	v.gateway(&c.Gateway)
	v.kubernetes(&c.Kubernetes)
	v.policy(&c.Policy, &c.Kubernetes.SandboxDataMount)
}

func (v *validator) providers(providers []string) {
	seen := map[string]int{}
	for i, name := range providers {
		p := indexPath(pathConfig+".providers", i)
		switch problem := contract.StaticProviderProblem(name); {
		case problem != "":
			v.bad(p, name, msgStaticProviders+" "+problem)
		case i >= maxStaticProviders:
			v.bad(p, name, fmt.Sprintf("at most %d static providers: OpenShell attaches %d providers per Sandbox, and every Codex Sandbox also carries its runtime provider.", maxStaticProviders, contract.MaxSandboxProviders))
		default:
			if first, dup := seen[name]; dup {
				v.bad(p, name, fmt.Sprintf("duplicate of %s; list each static provider once.", indexPath(pathConfig+".providers", first)))
				continue
			}
			seen[name] = i
		}
	}
}

func (v *validator) gateway(g *GatewayConfig) {
	switch g.WorkspaceMode {
	case WorkspaceModeOperator, WorkspaceModeManaged:
	case "":
		v.missing(pathGateway+".workspaceMode", "OpenShell gateway workspaceMode must be managed or operator. "+msgWorkspaceMode)
	default:
		v.bad(pathGateway+".workspaceMode", g.WorkspaceMode, "OpenShell gateway workspaceMode must be managed or operator. "+msgWorkspaceMode)
	}
	lp := pathGateway + ".operatorNamespaceLabels"
	if len(g.OperatorNamespaceLabels) == 0 {
		if g.WorkspaceMode == WorkspaceModeOperator {
			v.missing(lp, "OpenShell operator Namespace labels must not be empty. The Gateway's namespace selector must match them (for example openshell.ai/openclaw-workspace: \"true\").")
		}
	} else {
		v.labels(lp, "OpenShell operator Namespace labels", g.OperatorNamespaceLabels)
	}
	if r := g.Readiness; r != nil {
		v.readiness(r)
	}
	seen := map[string]string{}
	v.objects(pathGateway+".operatorWorkspaceResources", g.OperatorWorkspaceResources, true, seen)
	v.objects(pathGateway+".networkPolicyResources", g.NetworkPolicyResources, false, seen)
}

// labels checks a label set: at least one entry, each a valid Kubernetes label key and a
// non-empty valid value.
func (v *validator) labels(p, desc string, labels map[string]string) {
	for _, k := range sortedKeys(labels) {
		kp := childPath(p, k)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			v.bad(kp, k, fmt.Sprintf("%s key must be a nonempty string and a valid Kubernetes label key: %s", desc, strings.Join(errs, "; ")))
			continue
		}
		val := labels[k]
		if val == "" {
			v.bad(kp, val, fmt.Sprintf("%s.%s must be a nonempty string.", desc, k))
			continue
		}
		if errs := validation.IsValidLabelValue(val); len(errs) > 0 {
			v.bad(kp, val, fmt.Sprintf("%s.%s must be a valid Kubernetes label value: %s", desc, k, strings.Join(errs, "; ")))
		}
	}
}

func (v *validator) readiness(r *Readiness) {
	p := pathGateway + ".readiness"
	if r.ServiceName == "" {
		v.missing(p+".serviceName", "readiness.serviceName must name the gateway Service in the OCC namespace. "+msgReadiness)
	} else if errs := validation.IsDNS1123Label(r.ServiceName); len(errs) > 0 {
		v.bad(p+".serviceName", r.ServiceName, "readiness.serviceName must be a Kubernetes Service name: "+strings.Join(errs, "; "))
	}
	if len(r.PodSelector) == 0 {
		v.missing(p+".podSelector", "readiness.podSelector must contain at least one label selecting the gateway Pods. "+msgReadiness)
	} else {
		v.labels(p+".podSelector", "readiness.podSelector", r.PodSelector)
	}
	switch {
	case r.TimeoutMs == nil:
		v.missing(p+".timeoutMs", msgReadiness)
	case *r.TimeoutMs < 1 || *r.TimeoutMs > maxSafeInt:
		v.bad(p+".timeoutMs", strconv.FormatInt(*r.TimeoutMs, 10), fmt.Sprintf("readiness.timeoutMs must be a positive safe integer, from 1 to %d. %s", int64(maxSafeInt), msgReadiness))
	}
	if r.PollIntervalMs != nil && (*r.PollIntervalMs < 1 || *r.PollIntervalMs > maxInt32) {
		v.bad(p+".pollIntervalMs", strconv.FormatInt(*r.PollIntervalMs, 10), fmt.Sprintf("readiness.pollIntervalMs must be a positive integer no greater than %d (omit it for the default %d). %s", maxInt32, DefaultPollIntervalMs, msgReadiness))
	}
}

func (v *validator) kubernetes(k *KubernetesConfig) {
	if k.RuntimeClassName == "" {
		v.missing(pathK8s+".runtimeClassName", "kubernetes.runtimeClassName must name the operator-installed RuntimeClass for OpenShell's privileged components (for example openshell-sandbox).")
	} else if errs := validation.IsDNS1123Subdomain(k.RuntimeClassName); len(errs) > 0 {
		v.bad(pathK8s+".runtimeClassName", k.RuntimeClassName, "kubernetes.runtimeClassName must be a RuntimeClass name: "+strings.Join(errs, "; "))
	}
	switch k.ServiceAccount.Mode {
	case ServiceAccountModeGatewayConfigured:
	case "":
		v.missing(pathK8s+".serviceAccount.mode", "OpenShell serviceAccount mode must be gatewayConfigured. "+msgServiceAccount)
	default:
		v.bad(pathK8s+".serviceAccount.mode", k.ServiceAccount.Mode, "OpenShell serviceAccount mode must be gatewayConfigured. "+msgServiceAccount)
	}
	v.dataMount(&k.SandboxDataMount)
	if r := k.AgentResources; r != nil {
		v.agentResources(r)
	}
}

// reservedSandboxPaths are where the Driver mounts the runtime root and relocated Harness
// mounts; the data mount may not land on or below them.
var reservedSandboxPaths = []string{"/sandbox/.openclaw-runtime", "/sandbox/.openclaw-mounts"}

func (v *validator) dataMount(m *SandboxDataMount) {
	p := pathK8s + ".sandboxDataMount"
	if m.ClaimName != nil {
		if errs := validation.IsDNS1123Subdomain(*m.ClaimName); len(errs) > 0 {
			v.bad(p+".claimName", *m.ClaimName, "claimName, when set, must be a PersistentVolumeClaim name: "+strings.Join(errs, "; "))
		}
	}
	if m.SubPath == "" {
		v.missing(p+".subPath", "OpenShell sandboxDataMount must use an exact PVC subpath. "+msgDataMount)
	} else if !contract.IsExactSubPath(m.SubPath) {
		v.bad(p+".subPath", m.SubPath, "OpenShell sandboxDataMount must use an exact PVC subpath (relative, not empty, not ., no .. and no empty or trailing segments). "+msgDataMount)
	} else if contract.OnRuntimeSubPath(m.SubPath) {
		v.bad(p+".subPath", m.SubPath, contract.MsgRuntimeSubPath+" Choose another subpath for the workspace (for example workspace).")
	}
	switch clean := path.Clean(m.MountPath); {
	case m.MountPath == "":
		v.missing(p+".mountPath", "OpenShell sandboxDataMount must mount an approved PVC subpath under /sandbox. "+msgDataMount)
	case strings.HasPrefix(m.MountPath, "/") && clean != m.MountPath && strings.HasPrefix(clean, "/sandbox/"):
		v.bad(p+".mountPath", m.MountPath, "OpenShell sandboxDataMount mountPath is not canonical (a trailing slash, a . or .. segment, or a doubled slash): write "+clean+", the exact path the Driver and the revision's mount must share. "+msgDataMount)
	case !isExactAbsolutePath(m.MountPath) || !strings.HasPrefix(m.MountPath, "/sandbox/"):
		v.bad(p+".mountPath", m.MountPath, "OpenShell sandboxDataMount must mount an approved PVC subpath under /sandbox. "+msgDataMount)
	default:
		for _, r := range reservedSandboxPaths {
			if m.MountPath == r || strings.HasPrefix(m.MountPath, r+"/") {
				v.bad(p+".mountPath", m.MountPath, r+" is reserved for the Driver's runtime mounts; mount the workspace elsewhere under /sandbox/ (for example /sandbox/enterprise).")
			}
		}
	}
	if m.ReadOnly == nil {
		v.missing(p+".readOnly", "OpenShell sandboxDataMount readOnly must be explicit (true or false).")
	}
}

// isExactAbsolutePath reports whether s is an absolute, clean path other than the root.
func isExactAbsolutePath(s string) bool { return contract.IsExactAbsolutePath(s) }

func (v *validator) agentResources(r *AgentResources) {
	p := pathK8s + ".agentResources"
	check := func(list corev1.ResourceList, lp string) {
		for _, name := range sortedKeys(resourceNames(list)) {
			q := list[corev1.ResourceName(name)]
			np := childPath(lp, name)
			if errs := validation.IsQualifiedName(name); len(errs) > 0 {
				v.bad(np, name, "resource names must be Kubernetes resource names such as cpu, memory or ephemeral-storage: "+strings.Join(errs, "; "))
				continue
			}
			if q.Sign() < 0 {
				v.bad(np, q.String(), quantityRule+" This quantity is negative.")
			}
		}
	}
	check(r.Requests, p+".requests")
	check(r.Limits, p+".limits")
	for _, name := range sortedKeys(resourceNames(r.Requests)) {
		req := r.Requests[corev1.ResourceName(name)]
		limit, ok := r.Limits[corev1.ResourceName(name)]
		if ok && req.Cmp(limit) > 0 {
			v.bad(childPath(p+".requests", name), req.String(), fmt.Sprintf("%s The request exceeds its limit %s.", quantityRule, v.Written(childPath(p+".limits", name), limit.String())))
		}
	}
}

func resourceNames(l corev1.ResourceList) map[string]bool {
	out := make(map[string]bool, len(l))
	for k := range l {
		out[string(k)] = true
	}
	return out
}

func (v *validator) policy(pol *PolicyConfig, dataMount *SandboxDataMount) {
	pp := pathPolicy + ".process"
	for _, f := range []struct{ key, val string }{{"runAsUser", pol.Process.RunAsUser}, {"runAsGroup", pol.Process.RunAsGroup}} {
		switch {
		case f.val == "":
			v.missing(pp+"."+f.key, "policy.process."+f.key+" must be a nonempty quoted string (for example \"1000\"). "+msgProcess)
		case strings.TrimSpace(f.val) != f.val || strings.ContainsAny(f.val, " \t\r\n:"):
			v.bad(pp+"."+f.key, f.val, "policy.process."+f.key+" must be a single user or group id without spaces or colons. "+msgProcess)
		}
	}
	if fs := pol.Filesystem; fs != nil {
		v.filesystem(fs, dataMount)
	}
	if l := pol.LandlockCompatibility; l != nil && *l != LandlockHardRequirement {
		v.bad(pathPolicy+".landlockCompatibility", *l, "OpenShell policy.landlockCompatibility must be hard_requirement or omitted; best_effort is not supported. "+msgLandlock)
	}
	v.networkPolicies(pol.NetworkPolicies)
}

func (v *validator) filesystem(fs *FilesystemPolicy, dataMount *SandboxDataMount) {
	seen := map[string]string{}
	for _, list := range []struct {
		key   string
		paths []string
	}{{"readOnly", fs.ReadOnly}, {"readWrite", fs.ReadWrite}} {
		for i, p := range list.paths {
			ip := indexPath(pathPolicy+".filesystem."+list.key, i)
			if !isExactAbsolutePath(p) {
				v.bad(ip, p, "OpenShell filesystem policy path must be an exact non-root absolute path."+contract.PathHint(p))
				continue
			}
			if first, dup := seen[p]; dup {
				v.bad(ip, p, fmt.Sprintf("the path is already listed at %s; list each path once, in readOnly or readWrite.", first))
				continue
			}
			seen[p] = ip
		}
	}
	// The driver mounts a read-only data mount read-only; a read-write grant over it would let
	// the Harness write where Compute approved only reading.
	if dataMount.ReadOnly == nil || !*dataMount.ReadOnly || !isExactAbsolutePath(dataMount.MountPath) {
		return
	}
	for i, p := range fs.ReadWrite {
		if isExactAbsolutePath(p) && contract.PathsOverlap(p, dataMount.MountPath) {
			v.bad(indexPath(pathPolicy+".filesystem.readWrite", i), p, fmt.Sprintf("OpenShell filesystem policy must not grant read-write access to read-only mount %s. Remove the path, or set kubernetes.sandboxDataMount.readOnly: false.", dataMount.MountPath))
		}
	}
}

var (
	tlsModes         = []string{"skip", "terminate"}
	enforcementModes = []string{"enforce", "audit"}
	accessPresets    = []string{"read_only", "read_write", "full"}
)

func (v *validator) networkPolicies(policies []NetworkPolicy) {
	np := pathPolicy + ".networkPolicies"
	if len(policies) == 0 {
		v.missing(np, "OpenShell requires at least one sandbox network policy (for example source-control for /usr/bin/git to github.com:443).")
		return
	}
	names := map[string]int{}
	for i := range policies {
		pol := &policies[i]
		p := indexPath(np, i)
		desc := "OpenShell network policy " + pol.Name
		switch {
		case strings.TrimSpace(pol.Name) == "":
			if pol.Name == "" {
				v.missing(p+".name", "OpenShell network policy name must be a nonempty string.")
			} else {
				v.bad(p+".name", pol.Name, "OpenShell network policy name must be a nonempty string.")
			}
			desc = fmt.Sprintf("OpenShell network policy #%d", i)
		case pol.Name == ReservedNetworkPolicyName:
			v.bad(p+".name", pol.Name, msgReserved+" The Driver adds its own workspace-node-enrollment rule; rename this policy.")
		default:
			if first, dup := names[pol.Name]; dup {
				v.bad(p+".name", pol.Name, fmt.Sprintf("%s The name is already used by %s.", msgUniqueNames, indexPath(np, first)))
			} else {
				names[pol.Name] = i
			}
		}
		if len(pol.Binaries) == 0 {
			v.missing(p+".binaries", desc+" requires at least one binary path. "+msgUniqueNames)
		}
		for j, b := range pol.Binaries {
			// The path is built only for a problem: a valid Installation costs no allocation here.
			bp := func() string { return indexPath(p+".binaries", j) + ".path" }
			switch {
			case b.Path == "":
				v.missing(bp(), desc+" requires at least one binary path. "+msgUniqueNames)
			case strings.TrimSpace(b.Path) == "":
				v.bad(bp(), b.Path, desc+" requires at least one binary path. "+msgUniqueNames)
			case !contract.IsExactAbsolutePath(b.Path):
				v.bad(bp(), b.Path, desc+" "+msgBinaryPath+contract.PathHint(b.Path))
			}
		}
		if len(pol.Endpoints) == 0 {
			rule := desc + " requires at least one endpoint: a rule without one allows nothing, so its binaries would reach no host (for example endpoints: [{host: github.com, ports: [443]}])."
			if pol.Endpoints == nil {
				v.missing(p+".endpoints", rule)
			} else {
				v.bad(p+".endpoints", "[]", rule)
			}
		}
		for j := range pol.Endpoints {
			v.endpointRule(indexPath(p+".endpoints", j), desc, &pol.Endpoints[j])
		}
	}
}

func (v *validator) endpointRule(p, desc string, e *Endpoint) {
	switch problem := contract.NetworkHostProblem(e.Host); {
	case e.Host == "":
		v.missing(p+".host", desc+" "+problem+".")
	case problem != "":
		v.bad(p+".host", e.Host, desc+" "+problem+".")
	default:
		if problem := contract.ModelEndpointProblem(e.Host); problem != "" {
			v.bad(p+".host", e.Host, problem)
		}
	}
	switch {
	case e.Ports == nil:
		v.missing(p+".ports", desc+" "+msgPortsRequired)
	case len(e.Ports) == 0:
		v.bad(p+".ports", "[]", desc+" "+msgPortsRequired)
	}
	for k, port := range e.Ports {
		if !contract.ValidPort(port) {
			v.bad(indexPath(p+".ports", k), strconv.Itoa(port), desc+" port must be a valid TCP port. Ports are from 1 to 65535.")
		}
	}
	if e.TLS != nil && !oneOf(*e.TLS, tlsModes) {
		rule := desc + " TLS mode must be one of: skip, terminate. " + msgOptions
		if *e.TLS == "passthrough" {
			rule += " Write tls: skip."
		}
		v.bad(p+".tls", *e.TLS, rule)
	}
	if e.Enforcement != nil && !oneOf(*e.Enforcement, enforcementModes) {
		v.bad(p+".enforcement", *e.Enforcement, desc+" enforcement mode must be one of: enforce, audit. "+msgOptions)
	}
	if e.Access != nil && !oneOf(*e.Access, accessPresets) {
		v.bad(p+".access", *e.Access, desc+" access preset must be one of: read_only, read_write, full. "+msgOptions)
	}
	if e.Protocol == nil {
		return
	}
	proto := strings.ToLower(*e.Protocol)
	switch proto {
	case "tcp":
		if e.Access != nil {
			v.bad(p+".access", *e.Access, desc+": protocol tcp takes no access preset; remove access. "+msgProtocolOptions)
		}
		if e.Enforcement != nil {
			v.bad(p+".enforcement", *e.Enforcement, desc+": protocol tcp takes no enforcement mode; remove enforcement. "+msgProtocolOptions)
		}
	case "rest", "websocket", "graphql", "sql":
		if e.Access == nil {
			v.missing(p+".access", fmt.Sprintf("%s: protocol %s needs an access preset (read_only, read_write or full). %s", desc, proto, msgProtocolOptions))
		}
		if proto == "sql" && (e.Enforcement == nil || *e.Enforcement != "audit") {
			rule := desc + ": protocol sql allows only enforcement: audit. " + msgProtocolOptions
			if e.Enforcement == nil {
				v.missing(p+".enforcement", rule+" Omitting it would mean enforce.")
			} else {
				v.bad(p+".enforcement", *e.Enforcement, rule)
			}
		}
	case "json-rpc", "jsonrpc", "mcp":
		v.bad(p+".protocol", *e.Protocol, desc+": "+msgProtocolRefused+" "+msgProtocol)
	default:
		v.bad(p+".protocol", *e.Protocol, desc+": unsupported protocol. "+msgProtocol)
	}
}

func oneOf(s string, allowed []string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}
