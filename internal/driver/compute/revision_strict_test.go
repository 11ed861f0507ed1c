package compute

import (
	"regexp"
	"strings"
	"testing"
)

// mentions reports whether msg has a problem at path whose parenthesised details name line.
func mentions(msg, path, line string) bool {
	return regexp.MustCompile(regexp.QuoteMeta(path) + ` \([^)]*` + regexp.QuoteMeta(line) + `\b`).MatchString(msg)
}

// An engineer writes a revision key in the wrong case (readonly, LOGINMODE, NamespaceID) or
// next to its correct spelling; each is an unknown key, refused with its YAML path and line,
// never folded into the real key.
func TestRevisionKeysAreCaseExact(t *testing.T) {
	mount := "  mounts:\n    - claimName: data\n      subPath: workspace\n      mountPath: /sandbox/enterprise\n"
	cases := []struct {
		name, from, to, wantPath, wantLine string
	}{
		{"lower-case readonly", "  loginMode: api_key\n", mount + "      readonly: false\n  loginMode: api_key\n",
			"workload.mounts[0].readonly", "line 16"},
		{"READONLY beside readOnly", "  loginMode: api_key\n", mount + "      readOnly: false\n      READONLY: true\n  loginMode: api_key\n",
			"workload.mounts[0].READONLY", "line 17"},
		{"LOGINMODE", "  loginMode: api_key\n", "  loginMode: api_key\n  LOGINMODE: chatgpt\n",
			"workload.LOGINMODE", "line 13"},
		{"NamespaceID", "namespaceId: ns_acme\n", "namespaceId: ns_acme\nNamespaceID: ns_other\n",
			"NamespaceID", "line 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(minimalRevision, tc.from, tc.to, 1)
			rf, err := ParseRevisionFile([]byte(src))
			if err == nil {
				t.Fatalf("accepted; workload %+v, namespaceId %q", rf.Workload, rf.NamespaceID)
			}
			msg := err.Error()
			if !mentions(msg, tc.wantPath, tc.wantLine) || !strings.Contains(msg, "unknown key") {
				t.Errorf("error does not refuse %s at %s as an unknown key:\n%s", tc.wantPath, tc.wantLine, msg)
			}
		})
	}
}

// A misspelled key is reported with its YAML path and line and the keys the block allows, not
// as a bare `json: unknown field`.
func TestRevisionUnknownKeyNamesPathAndLine(t *testing.T) {
	_, err := LoadRevisionFile(revisionsDir + "/invalid/unknown-key.yaml")
	if err == nil {
		t.Fatal("loaded; want a refusal")
	}
	msg := err.Error()
	if !mentions(msg, "workload.imagePullPolicy", "line 13") || !strings.Contains(msg, "allowed keys are image, command, env, mounts, serviceAccount, loginMode") {
		t.Errorf("error does not name workload.imagePullPolicy, its line 13 and the allowed keys:\n%s", msg)
	}
	if strings.Contains(msg, "json:") {
		t.Errorf("error leaks the JSON decoder's wording:\n%s", msg)
	}
}

// A file with three mistakes at different levels (an unknown top-level key, a wrong-typed
// nested value, and a rule violation) reports all three at once, each with path and line.
func TestRevisionReportsEveryProblem(t *testing.T) {
	src := strings.NewReplacer(
		"agentId: agent_support\n", "agentId: agent_support\nagentName: support\n",
		"  command: [node]\n", "  command: node\n",
		"sandboxDriverId: sandbox-openshell-development\n", "sandboxDriverId: \"\"\n",
	).Replace(minimalRevision)
	_, err := ParseRevisionFile([]byte(src))
	if err == nil {
		t.Fatal("accepted; want three problems")
	}
	msg := err.Error()
	for _, want := range []struct{ path, line string }{{"agentName", "line 5"}, {"workload.command", "line 12"}, {"sandboxDriverId", "line 7"}} {
		if !mentions(msg, want.path, want.line) {
			t.Errorf("error lacks %s at %s:\n%s", want.path, want.line, msg)
		}
	}
	if !strings.Contains(msg, "3 problems") {
		t.Errorf("error does not count 3 problems:\n%s", msg)
	}
}

// An engineer leaves namespaceId out of a revision file (or misspells its case): the fix names
// the file's own key, namespaceId, never the driver's namespace.id, which a revision file does
// not have.
func TestRevisionMissingNamespaceIDNamesTheFileKey(t *testing.T) {
	src := strings.Replace(minimalRevision, "namespaceId: ns_acme\n", "", 1)
	_, err := ParseRevisionFile([]byte(src))
	if err == nil {
		t.Fatal("accepted a revision without namespaceId")
	}
	msg := err.Error()
	if !strings.Contains(msg, "namespaceId (missing") || !strings.Contains(msg, "set the OCC Namespace ID (for example ns_7f3a2c)") || strings.Contains(msg, "namespace.id") {
		t.Errorf("the refusal does not tell the author to set namespaceId:\n%s", msg)
	}
}
