package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// An engineer pastes an endpoint with credentials in its userinfo, query string, fragment or a
// percent-encoded part; whatever its form, the credential never survives redaction, the part
// that held it is named, and an endpoint without one is unchanged.
func TestRedactURL(t *testing.T) {
	const secret = "hunter2"
	for in, want := range map[string]struct{ redacted, part string }{
		"http://admin:hunter2@host:30051":     {"http://REDACTED@host:30051", "userinfo"},
		"https://hunter2@host":                {"https://REDACTED@host", "userinfo"},
		"admin:hunter2@host:30051":            {"REDACTED@host:30051", "userinfo"},
		"http://a:hunter2@b@host":             {"http://REDACTED@host", "userinfo"},
		"http://admin:pa/hunter2@host":        {"http://REDACTED@host", "userinfo"},
		"ws://node:hunter2@gw:18789/path?q=1": {"ws://REDACTED@gw:18789/path?REDACTED", "userinfo"},
		"http://gw:8080/?token=hunter2":       {"http://gw:8080/?REDACTED", "a query string"},
		"http://gw:8080?token=hunter2#x":      {"http://gw:8080?REDACTED", "a query string"},
		"gw:8080?token=hunter2":               {"gw:8080?REDACTED", "a query string"},
		"https://gw#access_token=hunter2":     {"https://gw#REDACTED", "a fragment"},
		"http://gw:8080/%3Ftoken%3Dhunter2":   {"http://gw:8080/REDACTED", "percent-encoding"},
		"http://admin%3Ahunter2%40gw:8080":    {"http://REDACTED", "percent-encoding"},
		"gw:8080/?u=http://x:y@z&t=hunter2":   {"gw:8080/?REDACTED", "a query string"},
		"http://host:30051":                   {"http://host:30051", ""},
		"host:30051":                          {"host:30051", ""},
		"http://gw:8080/v1":                   {"http://gw:8080/v1", ""},
	} {
		got := RedactURL(in)
		if got != want.redacted || (strings.Contains(in, secret) && strings.Contains(got, secret)) {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want.redacted)
		}
		if part := CredentialPart(in); !strings.HasPrefix(part, want.part) || (want.part == "") != (part == "") {
			t.Errorf("CredentialPart(%q) = %q, want %q", in, part, want.part)
		}
	}
}

// The one subpath rule the Installation, revision files and the driver share.
func TestIsExactSubPath(t *testing.T) {
	for s, want := range map[string]bool{
		"workspace": true, "a/b": true, "a.b": true, "..a": true,
		"": false, ".": false, "..": false, "/a": false, "a/": false, "a//b": false, "a/./b": false,
		"a/../b": false, `a\b`: false, "a\x00b": false,
	} {
		if IsExactSubPath(s) != want {
			t.Errorf("IsExactSubPath(%q) = %v, want %v", s, !want, want)
		}
	}
}

// A network endpoint host is a bare name or address: the port, a URL or credentials in it are
// refused with the fix.
func TestNetworkHostProblem(t *testing.T) {
	for host, ok := range map[string]bool{
		"github.com": true, "*.github.com": true, "GitHub.com": true, "github.com.": true, "10.0.0.1": true, "::1": true, "a_b.example": true,
		"": false, " ": false, "github.com:443": false, "[::1]": false, "https://github.com": false, "github.com/org": false,
		"user@github.com": false, "-bad.com": false, "a..b": false, "*": false, "ex ample.com": false,
	} {
		problem := NetworkHostProblem(host)
		if (problem == "") != ok {
			t.Errorf("NetworkHostProblem(%q) = %q, want ok=%v", host, problem, ok)
		}
	}
	if p := NetworkHostProblem("github.com:443"); !strings.Contains(p, "write host: github.com, ports: [443]") {
		t.Errorf("the host:port problem does not give the fix: %q", p)
	}
}

// Static providers stay outside both shapes of provider names OCC issues.
func TestStaticProviderProblem(t *testing.T) {
	for name, ok := range map[string]bool{
		"static-a": true, "oce-cs-x": true, "oce-csx": true, "oce-runtime-xyz": true, "OCE-CS-0123456789abcdef01234567": true,
		"": false, " ": false, CredentialProviderName("cs_a"): false, "oce-runtime-0123456789abcdef": false,
	} {
		if (StaticProviderProblem(name) == "") != ok {
			t.Errorf("StaticProviderProblem(%q) = %q, want ok=%v", name, StaticProviderProblem(name), ok)
		}
	}
}

// copiesPendingElsewhere are files that still spell a metadata key out instead of using this
// package. Other work owns them (the occdev layers, the OCE control plane and its stand-in, the
// gateway emulator); each should switch to the constant named in the report, then leave this
// list.
var copiesPendingElsewhere = map[string]bool{}

// notMetadata are string literals that look like metadata keys but are not.
var notMetadata = map[string]bool{
	// The domain separator of the deterministic CreateSandbox request IDs (a hash input).
	"openclaw.dev/openshell-create-sandbox/v1": true,
}

// Every label or annotation key OCC, OpenShell or Kubernetes defines is spelled out once, here:
// product code anywhere else that writes one as a string literal has copied it, and copies drift.
func TestMetadataKeysDefinedOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	found := 0
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "internal/contract" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".pb.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || notMetadata[s] || !metadataKey(s) {
				return true
			}
			if copiesPendingElsewhere[rel] {
				found++
				return true
			}
			t.Errorf("%s: %q is a copy of a metadata key; use the constant in package contract", fset.Position(lit.Pos()), s)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d copies remain in files listed in copiesPendingElsewhere", found)
}

func metadataKey(s string) bool {
	return strings.HasPrefix(s, OCCLabelPrefix) || strings.HasPrefix(s, "openshell.ai/") || strings.HasPrefix(s, "app.kubernetes.io/")
}

// A network rule host covers the model endpoint when it names it or its wildcard matches it, in
// any case and with or without the root dot; a wildcard below it, or another name, does not.
func TestModelEndpointProblem(t *testing.T) {
	for host, covers := range map[string]bool{
		"api.openai.com": true, "API.OpenAI.com.": true, "*.openai.com": true, "*.com": true, "*.OPENAI.COM.": true,
		"openai.com": false, "*.api.openai.com": false, "*.example.com": false, "github.com": false, "api.openai.com.evil": false,
	} {
		if problem := ModelEndpointProblem(host); (problem != "") != covers {
			t.Errorf("ModelEndpointProblem(%q) = %q, want covers=%v", host, problem, covers)
		}
	}
	if p := ModelEndpointProblem("*.openai.com"); !strings.Contains(p, "*.openai.com matches api.openai.com") {
		t.Errorf("the problem does not say which host the wildcard matches: %q", p)
	}
}
