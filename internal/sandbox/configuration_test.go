package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An engineer hands configure-agent a native configuration as JSON or as YAML: both decode to
// the same object, numbers keep their text, and a YAML key given twice (with its path and
// line), a list, an empty file or a missing file is refused with the file named.
func TestReadConfiguration(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fromJSON, err := ReadConfiguration(write("c.json", `{"model":"gpt-5","limits":{"tokens":9007199254740993}}`))
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := ReadConfiguration(write("c.yaml", "model: gpt-5\nlimits:\n  tokens: 9007199254740993\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromJSON)
	b, _ := json.Marshal(fromYAML)
	if string(a) != string(b) || !strings.Contains(string(a), "9007199254740993") {
		t.Fatalf("JSON gave %s, YAML gave %s; want the same object with the exact number", a, b)
	}
	for name, tc := range map[string]struct{ body, want string }{
		"dup.yaml":   {"model: a\nmodel: b\n", `model (line 2, value "b"): the key appears more than once`},
		"list.yaml":  {"- model\n", "must be a JSON or YAML object (keys and values), not a list"},
		"empty.yaml": {"", "the configuration is empty"},
	} {
		p := write(name, tc.body)
		_, err := ReadConfiguration(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want %q naming %s", name, err, tc.want, p)
		}
	}
	missing := filepath.Join(dir, "missing.yaml")
	if _, err := ReadConfiguration(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: error %v, want it to name %s", err, missing)
	}
}
