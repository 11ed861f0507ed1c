package cli

import (
	"os"
	"strings"
	"testing"
)

// An engineer exports a setting with a value that is not of its type (OCC_TAIL=abc or 1.5,
// OCC_VERBOSITY=abc, OCC_POD_TIMEOUT=soon) or outside its range (OCC_TAIL=0): like a bad flag,
// the command stops with a usage error (exit 2) that names the variable and the value it found,
// instead of reading it as 0 or ignoring it.
func TestBadEnvironmentValuesAreNamed(t *testing.T) {
	inst := "../../testdata/installation/dev.yaml"
	rev := "../../testdata/revisions/codex.yaml"
	logs := []string{"sandbox", "logs", "--installation", inst, "--revision", rev, "--gateway", "127.0.0.1:1"}
	for _, c := range []struct {
		env, value string
		args       []string
	}{
		{"OCC_TAIL", "abc", logs},
		{"OCC_TAIL", "1.5", logs},
		{"OCC_TAIL", "0", logs},
		{"OCC_VERBOSITY", "abc", []string{"version"}},
		{"OCC_VERBOSITY", "-1", []string{"version"}},
		{"OCC_POD_TIMEOUT", "soon", []string{"sandbox", "provision", "--installation", inst, "--revision", rev}},
	} {
		t.Run(c.env+"="+c.value, func(t *testing.T) {
			isolate(t)
			t.Setenv(c.env, c.value)
			code, out, errOut := run(t, c.args...)
			if code != 2 || !strings.Contains(errOut, c.env) || !strings.Contains(errOut, `"`+c.value+`"`) {
				t.Errorf("exit %d, want 2 naming %s and %q\nstdout %s\nstderr %s", code, c.env, c.value, out, errOut)
			}
		})
	}
	// A good value still works, and an explicit flag still wins over the variable.
	isolate(t)
	t.Setenv("OCC_VERBOSITY", "2")
	if code, _, errOut := run(t, "version"); code != 0 {
		t.Errorf("OCC_VERBOSITY=2: exit %d\n%s", code, errOut)
	}
	t.Setenv("OCC_TAIL", "abc")
	os.Unsetenv("OCC_VERBOSITY")
	code, _, errOut := run(t, append(logs, "--tail", "5")...)
	if strings.Contains(errOut, "OCC_TAIL") {
		t.Errorf("--tail 5 did not win over OCC_TAIL=abc: exit %d\n%s", code, errOut)
	}
}
