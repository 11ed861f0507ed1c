package compute

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An engineer writes something the frozen configuration cannot hold (an infinity, a key given
// twice, an anchor and alias): the revision file is refused with exactly that problem, at its
// path and line, and never also told that the configuration is missing, since it is there.
func TestRevisionConfigurationProblemHasNoKnockOn(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "revisions", "codex.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, add, path string }{
		{"infinity", "  temperature: .inf\n", "configuration.temperature"},
		{"duplicate key", "  model: gpt-4\n", "configuration.model"},
		{"alias", "  a: &x 1\n  b: *x\n", "configuration.a"},
	} {
		src := strings.Replace(string(raw), "configuration:\n  model: gpt-5\n", "configuration:\n  model: gpt-5\n"+tc.add, 1)
		_, err := ParseRevisionFile([]byte(src))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.path+" (line ") {
			t.Errorf("%s: no problem at %s:\n%s", tc.name, tc.path, msg)
		}
		if strings.Contains(msg, "configuration (missing") {
			t.Errorf("%s: a knock-on problem says the configuration is missing:\n%s", tc.name, msg)
		}
	}
}
