package installation

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/conversion"

	"go.yaml.in/yaml/v3"
)

// The development Installation `dev up` writes for the Compose profile passes every rule.
func TestDevInstallationIsValid(t *testing.T) {
	in, err := Load(filepath.Join(fixtureDir, "dev.yaml"))
	if err != nil {
		t.Fatalf("Load(dev.yaml) = %v", err)
	}
	b := in.OpenShellBackend()
	if b == nil || b.ID != "openshell" || *b.Configuration.Endpoint != "http://k3d-occ-dev-server-0:30051" {
		t.Fatalf("OpenShellBackend() = %+v", b)
	}
	c := in.SandboxConfig()
	if c == nil || c.Gateway.WorkspaceMode != WorkspaceModeOperator {
		t.Fatalf("SandboxConfig() = %+v", c)
	}
	if got := c.Gateway.NetworkPolicyResources[0].GetName(); got != "allow-openshell-sandbox-callback" {
		t.Errorf("networkPolicyResources[0] name = %q", got)
	}
	kinds := []string{}
	for _, o := range c.Gateway.OperatorWorkspaceResources {
		kinds = append(kinds, o.GetKind())
	}
	if want := []string{"ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("operatorWorkspaceResources kinds = %v, want %v", kinds, want)
	}
	if c.EffectiveSandboxNamePrefix() != "os" || c.EffectiveLogLevel() != "info" || !c.Policy.Filesystem.IncludesWorkdir() {
		t.Errorf("defaults: prefix %q, log level %q", c.EffectiveSandboxNamePrefix(), c.EffectiveLogLevel())
	}
	want := "backend openshell (http://k3d-occ-dev-server-0:30051), sandbox sandbox-openshell-development on compute-kubernetes, credential gateway credential-gateway-openshell-development, workspace mode operator, 1 network policy, 4 workspace resources, 1 network policy resource"
	if got := in.Summary().String(); got != want {
		t.Errorf("Summary() = %q\nwant        %q", got, want)
	}
}

// Every invalid fixture is refused with its expected message at its expected path, and with
// exactly the expected number of problems, so no rule fires twice or stays silent.
func TestInvalidFixtures(t *testing.T) {
	fixtures := loadFixtures(t)
	if len(fixtures) < 60 {
		t.Fatalf("%d invalid fixtures, want at least 60", len(fixtures))
	}
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			in, err := Parse(fx.data)
			if err == nil {
				t.Fatalf("Parse accepted the fixture: %+v", in.Summary())
			}
			var problems Problems
			if !errors.As(err, &problems) {
				t.Fatalf("Parse error %T %v is not Problems", err, err)
			}
			if len(problems) != fx.problems {
				t.Errorf("%d problems, want %d:\n%s", len(problems), fx.problems, problems.Error())
			}
			var match *Problem
			for i := range problems {
				if problems[i].Path == fx.path {
					match = &problems[i]
					break
				}
			}
			if match == nil {
				t.Fatalf("no problem at path %s; got:\n%s", fx.path, problems.Error())
			}
			for _, e := range fx.expects {
				if !strings.Contains(match.Message, e) {
					t.Errorf("message at %s lacks %q:\n%s", fx.path, e, match.Message)
				}
			}
			// Every message names its path, so a problem read alone still says where it is.
			for _, p := range problems {
				if !strings.HasPrefix(p.Message, p.Path) {
					t.Errorf("message does not start with its path %q: %s", p.Path, p.Message)
				}
			}
		})
	}
}

// A Secret refused from the workspace or provider-networking resources is shown only as
// Secret/<name>: neither its data nor its stringData values appear in any problem.
func TestRefusedSecretNeverEchoed(t *testing.T) {
	n := 0
	for _, fx := range loadFixtures(t) {
		if fx.canary == "" {
			continue
		}
		n++
		_, err := Parse(fx.data)
		if err == nil {
			t.Fatalf("%s: accepted", fx.name)
		}
		out, _ := json.Marshal(err)
		for _, leak := range []string{fx.canary, "Q0FOQVJZ"} {
			if strings.Contains(err.Error(), leak) || strings.Contains(string(out), leak) {
				t.Errorf("%s: the Secret value %q leaked into:\n%s\n%s", fx.name, leak, err, out)
			}
		}
		// Fixtures whose canary is a refused Secret's data also name the Secret as Secret/<name>;
		// the others carry their canary in an endpoint's credentials.
		if strings.Contains(string(fx.data), "kind: Secret") && !strings.Contains(string(out), `"value":"Secret/`) {
			t.Errorf("%s: the refused Secret is not named as Secret/<name>: %s", fx.name, out)
		}
	}
	if n < 2 {
		t.Fatalf("%d canary fixtures, want at least 2", n)
	}
}

// A document with several mistakes at different depths reports each of them, not just the
// first, and a value that failed to decode is not reported missing a second time.
func TestAllProblemsReported(t *testing.T) {
	data := strings.NewReplacer(
		"      requestTimeoutMs: 30000\n", "      requestTimeoutMs: 30000\n      retries: 3\n",
		"        workspaceMode: operator\n", "        workspaceMode: [operator]\n",
		"          mountPath: /sandbox/enterprise\n", "          mountPath: /sandbox/enterprise\n          mode: 0755\n",
		"                tls: skip\n", "                tls: skip\n                rules: []\n",
		`          runAsGroup: "1000"`, `          runAsGroup: 1000`,
	).Replace(readFixture(t, "dev.yaml"))
	_, err := Parse([]byte(data))
	var problems Problems
	if !errors.As(err, &problems) {
		t.Fatalf("Parse = %v", err)
	}
	want := []string{
		"backend[0].configuration.retries",
		"drivers.sandbox.configuration.gateway.workspaceMode",
		"drivers.sandbox.configuration.kubernetes.sandboxDataMount.mode",
		"drivers.sandbox.configuration.policy.process.runAsGroup",
		"drivers.sandbox.configuration.policy.networkPolicies[0].endpoints[0].rules",
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.Path)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problem paths = %v\nwant %v\n%s", got, want, problems.Error())
	}
}

// Blocks occ does not own survive a Decode/Marshal round trip byte for byte in meaning,
// comments included, and the typed blocks come back equal.
func TestMarshalRoundTrip(t *testing.T) {
	src := readFixture(t, "dev.yaml")
	in, err := Decode([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatalf("re-decoding Marshal output: %v\n%s", err, out)
	}
	assertSameInstallation(t, in, again)
	for _, carried := range []string{
		"kubeconfigPath: /run/openclaw-development/kubeconfig",
		"requireImmutableDigest: true",
		"gatewayNodeSelector:",
		"id: native-iam",
		"cluster: occ-dev",
	} {
		if !strings.Contains(string(out), carried) {
			t.Errorf("Marshal dropped carried content %q", carried)
		}
	}
	// A second round trip is a fixed point.
	out2, err := again.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(out2) {
		t.Errorf("Marshal is not stable:\n%s\n---\n%s", out, out2)
	}
}

// An Installation built in code (as `dev up` does) marshals to a document that loads.
func TestMarshalBuiltInstallation(t *testing.T) {
	in, err := Load(filepath.Join(fixtureDir, "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	built := &Installation{Backend: in.Backend, Drivers: Drivers{
		Compute: &ComputeSelection{ID: ComputeKubernetesID}, Sandbox: in.Drivers.Sandbox, CredentialGateway: in.Drivers.CredentialGateway,
	}}
	out, err := built.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(out); err != nil {
		t.Fatalf("built Installation does not load: %v\n%s", err, out)
	}
	if problems := built.Validate(); len(problems) != 0 {
		t.Fatalf("Validate on a built Installation: %v", problems)
	}
}

// An agentResources quantity keeps its value through Marshal and is always written quoted.
func TestAgentResourcesRoundTrip(t *testing.T) {
	src := strings.Replace(readFixture(t, "dev.yaml"), "        userNamespaces: false\n",
		"        userNamespaces: false\n        agentResources:\n          requests: {cpu: \"500m\", memory: \"768Mi\"}\n          limits: {cpu: \"2\", memory: \"6Gi\"}\n", 1)
	in, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `cpu: "2"`) {
		t.Errorf("quantity not written quoted:\n%s", out)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	got := again.SandboxConfig().Kubernetes.AgentResources.Requests["cpu"]
	if got.Cmp(resource.MustParse("500m")) != 0 {
		t.Errorf("cpu request = %s, want 500m", got.String())
	}
}

// A YAML anchor whose value contains an alias to itself is refused instead of producing a
// cyclic model that writers and readers would follow forever.
func TestRecursiveAliasRefused(t *testing.T) {
	in, err := Decode([]byte("presets: &x [*x]\n" + readFixture(t, "dev.yaml")))
	if in != nil || err == nil || !strings.Contains(err.Error(), "the alias *x refers to a value that contains it") {
		t.Fatalf("Decode = %v, %v", in, err)
	}
}

// Decode returns the problems and the decodable part of the model, so callers can validate
// the rest; a document that is not a mapping yields no model.
func TestDecodePartialModel(t *testing.T) {
	in, err := Decode([]byte("backend: []\ndrivers:\n  sandbox:\n    id: s\n    configuration:\n      startupDelayMs: soon\n"))
	if err == nil || in == nil || in.SandboxDriverID() != "s" {
		t.Fatalf("Decode = %v, %v", in, err)
	}
	if in, err := Decode([]byte("just a string")); err == nil || in != nil {
		t.Fatalf("Decode(scalar) = %v, %v", in, err)
	}
}

// The Problems error and its JSON form have the documented shape.
func TestProblemsShape(t *testing.T) {
	ps := Problems{newProblem("a.b", 0, "x", "rule one."), missingProblem("a.c", 0, "rule two.")}
	if got := ps.Error(); !strings.Contains(got, "2 problems") || !strings.Contains(got, `a.b (value "x"): rule one.`) || !strings.Contains(got, "a.c (missing): rule two.") {
		t.Errorf("Error() = %q", got)
	}
	b, _ := json.Marshal(ps[:1])
	if string(b) != `[{"path":"a.b","value":"x","message":"a.b (value \"x\"): rule one."}]` {
		t.Errorf("JSON = %s", b)
	}
	withLine := Problems{newProblem("a.b", 7, "x", "rule one."), missingProblem("a.c", 3, "rule two.")}
	if got := withLine.Error(); !strings.Contains(got, `a.b (line 7, value "x"): rule one.`) || !strings.Contains(got, "a.c (missing in the block at line 3): rule two.") {
		t.Errorf("Error() with lines = %q", got)
	}
	b, _ = json.Marshal(withLine[:1])
	if string(b) != `[{"path":"a.b","line":7,"value":"x","message":"a.b (line 7, value \"x\"): rule one."}]` {
		t.Errorf("JSON with a line = %s", b)
	}
	if (Problems{}).Err() != nil {
		t.Error("empty Problems is not a nil error")
	}
}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// installationEqualities compares models by meaning: quantities by value, YAML nodes by
// content rather than by source position.
var installationEqualities = conversion.EqualitiesOrDie(
	func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 },
	func(a, b yaml.Node) bool { return nodesEqual(&a, &b) },
)

func nodesEqual(a, b *yaml.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	// Aliases are compared by the anchor they name, never followed.
	if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || a.Value != b.Value || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !nodesEqual(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

func assertSameInstallation(t testing.TB, a, b *Installation) {
	t.Helper()
	// Decode-time bookkeeping is not part of the model.
	a2, b2 := *a, *b
	a2.failed, b2.failed, a2.keyOrder, b2.keyOrder = nil, nil, nil, nil
	a2.source, b2.source = nil, nil
	a2.Drivers.keyOrder, b2.Drivers.keyOrder = nil, nil
	if !installationEqualities.DeepEqual(a2, b2) {
		ab, _ := a.Marshal()
		bb, _ := b.Marshal()
		t.Fatalf("models differ after round trip:\n%s\n---\n%s", ab, bb)
	}
}

// `dev up` writes the Installation it built: the file is private, loads back equal, and an
// invalid Installation is refused without touching the existing file.
func TestWriteFile(t *testing.T) {
	in, err := Load(filepath.Join(fixtureDir, "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "installation.yaml")
	if err := in.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat %s: %v, mode %v; want 0600", path, err, st.Mode())
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	assertSameInstallation(t, in, back)

	before, _ := os.ReadFile(path)
	in.SandboxConfig().Gateway.WorkspaceMode = "shared"
	err = in.WriteFile(path)
	if err == nil || !strings.Contains(err.Error(), "workspaceMode") {
		t.Fatalf("WriteFile of an invalid Installation = %v, want the workspaceMode problem", err)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("a refused write changed the existing file")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// A carried block can be built from Go values.
func TestEncodeNode(t *testing.T) {
	n, err := EncodeNode(map[string]any{"authentication": map[string]string{"mode": "inCluster"}})
	if err != nil || n.Kind != yaml.MappingNode {
		t.Fatalf("EncodeNode = %v, %v", n, err)
	}
}
