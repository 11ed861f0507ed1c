package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The containerd shim calls runc with global options first; capfix must find the file whose
// capabilities runc will apply for each subcommand the shim uses.
func TestSpecFileFollowsRuncArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--root", "/run/r", "--log", "/l.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/p", "id"}, "/b/config.json"},
		{[]string{"--root=/run/r", "run", "-b=/b2", "id"}, "/b2/config.json"},
		{[]string{"--systemd-cgroup", "create", "id"}, "config.json"},
		{[]string{"--root", "/run/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, "/tmp/p.json"},
		{[]string{"exec", "-p", "/tmp/q.json", "id"}, "/tmp/q.json"},
		{[]string{"exec", "id", "sh"}, ""},
		{[]string{"--root", "/run/r", "start", "id"}, ""},
		{[]string{"--root", "/run/r", "delete", "--force", "id"}, ""},
		{[]string{"--version"}, ""},
	} {
		if got := specFile(c.args); got != c.want {
			t.Errorf("specFile(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// A privileged container on a host without CAP_SYS_RESOURCE: the capability goes from every set,
// everything else in the bundle survives unchanged.
func TestDropMissingRemovesOnlyMissingCapabilities(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	in := `{"ociVersion":"1.0.2","process":{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE","CAP_SYS_ADMIN"],"permitted":["CAP_SYS_RESOURCE"]},"cwd":"/"},"root":{"path":"rootfs"},"x-unknown":{"kept":true}}`
	if err := os.WriteFile(cfg, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := dropMissing(cfg, map[string]bool{"CAP_SYS_RESOURCE": true}); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(cfg)
	s := string(out)
	if strings.Contains(s, "CAP_SYS_RESOURCE") {
		t.Errorf("CAP_SYS_RESOURCE still present: %s", s)
	}
	for _, keep := range []string{`"CAP_CHOWN"`, `"CAP_SYS_ADMIN"`, `"permitted":[]`, `"x-unknown":{"kept":true}`, `"root":{"path":"rootfs"}`, `"args":["sh"]`} {
		if !strings.Contains(s, keep) {
			t.Errorf("rewritten config lost %s: %s", keep, s)
		}
	}

	// A process file (runc exec --process) has the capabilities at the top level.
	proc := filepath.Join(dir, "process.json")
	if err := os.WriteFile(proc, []byte(`{"args":["sh"],"capabilities":{"effective":["CAP_SYS_RESOURCE","CAP_KILL"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := dropMissing(proc, map[string]bool{"CAP_SYS_RESOURCE": true}); err != nil {
		t.Fatal(err)
	}
	if out, _ := os.ReadFile(proc); string(out) != `{"args":["sh"],"capabilities":{"effective":["CAP_KILL"]}}` {
		t.Errorf("process file = %s", out)
	}
}

// On a host with the full bounding set capfix is a pass-through: the file is not even rewritten.
func TestDropMissingLeavesFileAloneWhenNothingIsMissing(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	in := `{ "process": { "capabilities": { "bounding": ["CAP_CHOWN"] } } }`
	if err := os.WriteFile(cfg, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, missing := range []map[string]bool{{}, {"CAP_SYS_RESOURCE": true}} {
		if err := dropMissing(cfg, missing); err != nil {
			t.Fatal(err)
		}
		if out, _ := os.ReadFile(cfg); string(out) != in {
			t.Errorf("file rewritten with missing=%v: %s", missing, out)
		}
	}
}
