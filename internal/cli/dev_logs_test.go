package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A developer runs `occ dev logs` before anything is up: it says where it looked and how to
// start an environment (exit 1); a --since that is neither a duration nor a time, or a --tail
// below -1, is a usage error naming the flag, the value and the forms it takes (exit 2), before
// any state is read; completion of SERVICE offers nothing and no files.
func TestDevLogsWithoutEnvironment(t *testing.T) {
	dir := isolate(t)
	state := filepath.Join(dir, "no-state")
	code, out, errOut := run(t, "dev", "logs", "--state-dir", state)
	if code != 1 || out != "" || !strings.Contains(errOut, "no development environment at "+state) || !strings.Contains(errOut, "start one with occ dev up") {
		t.Errorf("no state: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, "dev", "logs", "--state-dir", state, "--since", "yesterday")
	if code != exitUsage || !strings.Contains(errOut, `--since "yesterday" is neither a duration nor an RFC 3339 time`) || !strings.Contains(errOut, "10m or 1h30m") {
		t.Errorf("--since yesterday: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "dev", "logs", "--state-dir", state, "--tail", "-3")
	if code != exitUsage || !strings.Contains(errOut, `--tail "-3" is below -1`) {
		t.Errorf("--tail -3: exit %d, stderr %q", code, errOut)
	}
	if got := complete(t, "dev", "logs", "--state-dir", state, ""); len(got) != 0 {
		t.Errorf("completion without state: %v", got)
	}
}
