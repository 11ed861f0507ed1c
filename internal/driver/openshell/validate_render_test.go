package openshell

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/installation"
)

// configDimension is one setting of the Sandbox configuration with the values the property
// test tries, each a YAML fragment; the first value is the development Installation's.
type configDimension struct {
	name   string
	values []string
}

// configDimensions cover the rules that validation and the driver both apply: provider names,
// data mount paths, process identity, filesystem and network policy shapes.
var configDimensions = []configDimension{
	{"sandboxNamePrefix", []string{"os", "", "o", "ab1", "O", "o-"}},
	{"providers", []string{"", "[static-a]", "[oce-cs-x]", "[oce-cs-0123456789abcdef01234567]", "[oce-csx]", `[""]`, "[a, a]", "[oce-cs-ABCDEF0123456789abcdef01]", "[oce-runtime-0123456789abcdef]"}},
	{"logLevel", []string{"", "info", "trace", "loud"}},
	{"subPath", []string{"workspace", "work/space", "./workspace", "workspace/", `"a\\b"`, "..", `"work space"`, "w", "a/../b", `"a//b"`}},
	{"mountPath", []string{"/sandbox/enterprise", "/sandbox/a/b", "/sandbox/", "/sandbox/.openclaw-runtime", "/sandbox/.openclaw-mounts/x", "/sandbox/enterprise/", "/home/node/w", "/sandbox/.openclaw-runtimex", "/sandbox"}},
	{"readOnly", []string{"false", "true"}},
	{"runAsUser", []string{`"1000"`, `"root"`, `"10 01"`, `"0"`}},
	{"filesystem", []string{"", "{readOnly: [/etc]}", "{readWrite: [/sandbox]}", "{readWrite: [/var/data], readOnly: [/var/data]}", "{readOnly: [etc]}",
		"{includeWorkdir: false}", "{readWrite: [/sandbox/enterprise]}", "{readOnly: [/sandbox/enterprise]}", "{readWrite: [/sandbox/enterprise/sub]}", "{readOnly: [/]}"}},
	{"landlockCompatibility", []string{"", "hard_requirement", "best_effort"}},
	{"policyName", []string{"source-control", "workspace-node-enrollment", `" "`, "Source_Control"}},
	{"binaries", []string{"[{path: /usr/bin/git}]", "[{path: git}]", "[]", "[{path: /usr/bin/../bin/git}]", "[{path: /usr/bin/git}, {path: /usr/bin/git}]", "[{path: /usr/bin/git/}]", "[{path: /}]"}},
	{"host", []string{"github.com", `"github.com:443"`, `"*.github.com"`, "10.0.0.1", `"::1"`, `"[::1]"`, "GitHub.COM", "github.com.", "user@github.com", "api.openai.com", `"github.com/org"`}},
	{"ports", []string{"[443]", "[]", "", "[0]", "[443, 443]", "[1, 65535]", "[65536]"}},
	{"protocol", []string{"", "tcp", "rest", "REST", "sql", "websocket", "mcp", "graphql"}},
	{"access", []string{"", "read_only", "full", "write"}},
	{"enforcement", []string{"", "audit", "enforce", "block"}},
	{"tls", []string{"skip", "", "terminate", "passthrough"}},
	{"endpoints", []string{"one", "none", "empty"}},
}

// configVariant is one choice per dimension, by index into its values.
type configVariant []int

func (v configVariant) value(name string) string {
	for i, d := range configDimensions {
		if d.name == name {
			return d.values[v[i]]
		}
	}
	panic("no dimension " + name)
}

func (v configVariant) String() string {
	var parts []string
	for i, d := range configDimensions {
		if v[i] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%s", d.name, d.values[v[i]]))
		}
	}
	if len(parts) == 0 {
		return "the development Installation"
	}
	return strings.Join(parts, " ")
}

// installationYAML writes the development Installation with the variant's Sandbox settings.
func (v configVariant) installationYAML(t *testing.T, dev string) string {
	t.Helper()
	opt := func(key, val, indent string) string {
		if val == "" {
			return ""
		}
		return indent + key + ": " + val + "\n"
	}
	var b strings.Builder
	b.WriteString("      kubernetes:\n        runtimeClassName: openshell-sandbox\n        userNamespaces: false\n")
	b.WriteString("        serviceAccount:\n          mode: gatewayConfigured\n        sandboxDataMount:\n")
	b.WriteString("          subPath: " + v.value("subPath") + "\n          mountPath: " + v.value("mountPath") + "\n          readOnly: " + v.value("readOnly") + "\n")
	b.WriteString("      policy:\n        process:\n          runAsUser: " + v.value("runAsUser") + "\n          runAsGroup: \"1000\"\n")
	b.WriteString(opt("filesystem", v.value("filesystem"), "        "))
	b.WriteString(opt("landlockCompatibility", v.value("landlockCompatibility"), "        "))
	b.WriteString("        networkPolicies:\n          - name: " + v.value("policyName") + "\n")
	b.WriteString("            binaries: " + v.value("binaries") + "\n")
	switch v.value("endpoints") {
	case "empty":
		b.WriteString("            endpoints: []\n")
	case "one":
		b.WriteString("            endpoints:\n              - host: " + v.value("host") + "\n")
		b.WriteString(opt("ports", v.value("ports"), "                "))
		b.WriteString(opt("protocol", v.value("protocol"), "                "))
		b.WriteString(opt("access", v.value("access"), "                "))
		b.WriteString(opt("enforcement", v.value("enforcement"), "                "))
		b.WriteString(opt("tls", v.value("tls"), "                "))
	}
	start := strings.Index(dev, "      kubernetes:\n")
	end := strings.Index(dev, "  credential_gateway:\n")
	head := strings.Index(dev, "      sandboxNamePrefix: os\n")
	if start < 0 || end < start || head < 0 || head > start {
		t.Fatal("dev.yaml lost the blocks the property test rewrites")
	}
	top := opt("sandboxNamePrefix", v.value("sandboxNamePrefix"), "      ") + opt("providers", v.value("providers"), "      ") + opt("logLevel", v.value("logLevel"), "      ")
	return dev[:head] + top + dev[head+len("      sandboxNamePrefix: os\n"):start] + b.String() + dev[end:]
}

// revisionYAML is the Codex example revision with its workspace mount at subPath, so the
// revision file decoder sees the same subpath the Installation's data mount names.
func revisionYAML(t *testing.T, codex, subPath string) string {
	t.Helper()
	const from = "      subPath: workspace\n"
	if !strings.Contains(codex, from) {
		t.Fatal("codex.yaml lost its workspace mount")
	}
	return strings.Replace(codex, from, "      subPath: "+subPath+"\n", 1)
}

// Whatever `occ sandbox validate` accepts, `occ sandbox render` accepts: for every pair of
// changes to the development Installation and for random combinations of more, every Installation that
// passes validation renders both dedicated Harnesses, and the revision decoder accepts the
// same workspace subpath. A rule enforced only at render (or checked differently in the two
// places) fails here with the variant that shows it.
func TestValidateAcceptedRendersAccepted(t *testing.T) {
	devBytes, err := os.ReadFile("../../../testdata/installation/dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	codexBytes, err := os.ReadFile("../../../testdata/revisions/codex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dev, codex := string(devBytes), string(codexBytes)

	// Every pair of values of two settings (which covers each single change), then random
	// combinations of several.
	var variants []configVariant
	for i, di := range configDimensions {
		for j := i + 1; j < len(configDimensions); j++ {
			for a := range di.values {
				for b := range configDimensions[j].values {
					v := make(configVariant, len(configDimensions))
					v[i], v[j] = a, b
					variants = append(variants, v)
				}
			}
		}
	}
	rng := rand.New(rand.NewSource(20260501))
	for n := 0; n < 1000; n++ {
		v := make(configVariant, len(configDimensions))
		for i, d := range configDimensions {
			// Mostly the development value, so accepted combinations stay common.
			if rng.Intn(3) == 0 {
				v[i] = rng.Intn(len(d.values))
			}
		}
		variants = append(variants, v)
	}

	accepted, failures := 0, 0
	seen := map[string]bool{}
	for _, v := range variants {
		src := v.installationYAML(t, dev)
		if seen[src] {
			continue
		}
		seen[src] = true
		in, err := installation.Parse([]byte(src))
		if err != nil {
			continue
		}
		accepted++
		if msg := renderVariant(t, in, codex); msg != "" {
			failures++
			if failures <= 10 {
				t.Errorf("validate accepted %s, but %s", v, msg)
			}
		}
	}
	if failures > 10 {
		t.Errorf("%d more variants accepted by validate were refused later", failures-10)
	}
	if accepted < 100 {
		t.Fatalf("only %d variants passed validation; the property test exercises too little", accepted)
	}
	t.Logf("%d distinct variants, %d accepted by validate and checked through render", len(seen), accepted)
}

// renderVariant returns why an accepted Installation fails later, or "".
func renderVariant(t *testing.T, in *installation.Installation, codexRevision string) string {
	t.Helper()
	cfg := in.Drivers.Sandbox.Configuration
	cfg.StartupDelayMs = nil
	d, err := New(Options{ID: in.SandboxDriverID(), Config: cfg, Backend: in.OpenShellBackend()})
	if err != nil {
		return "the driver refused it: " + err.Error()
	}
	subPath := cfg.Kubernetes.SandboxDataMount.SubPath
	rf, err := compute.ParseRevisionFile([]byte(revisionYAML(t, codexRevision, fmt.Sprintf("%q", subPath))))
	if err != nil {
		return "the revision decoder refused the same subPath: " + err.Error()
	}
	if _, err := (&compute.Compute{Driver: d}).PlanRevision(rf); err != nil {
		return "Compute's plan refused it: " + err.Error()
	}
	for _, h := range []struct {
		name string
		hctx func(string) driver.HarnessContext
	}{{"Codex", codexContext}, {"OpenClaw", openclawContext}} {
		hctx := h.hctx(testNamespace)
		hctx.Requirements.Mounts[0].SubPath = subPath
		if _, err := d.RenderCreateSandbox(hctx); err != nil {
			return h.name + " render refused it: " + err.Error()
		}
	}
	return ""
}
