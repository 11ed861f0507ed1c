package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Podman container on a host whose hard open-files limit is 20000 and that lacks
// CAP_SYS_RESOURCE: Podman asks for 1048576 open files and 32768 processes; the open-files
// limit comes down to what runc can grant, the process limit (within the host's) and every
// other field of the bundle stay as Podman wrote them.
func TestClampRlimitsLowersWhatTheHostCannotGrant(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	in := `{"ociVersion":"1.0.2-dev","process":{"args":["/bin/sh"],"rlimits":[{"type":"RLIMIT_NOFILE","hard":1048576,"soft":1048576},{"type":"RLIMIT_NPROC","hard":32768,"soft":32768},{"type":"RLIMIT_CORE","hard":100,"soft":10}],"capabilities":{"bounding":["CAP_CHOWN"]}},"root":{"path":"/var/lib/x/merged"},"annotations":{"io.podman.annotations.autoremove":"FALSE"}}`
	if err := os.WriteFile(cfg, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	ceilings := map[string]uint64{"RLIMIT_NOFILE": 20000, "RLIMIT_NPROC": 96362, "RLIMIT_CORE": 50}
	if err := clampRlimits(cfg, ceilings); err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(cfg)
	s := string(out)
	for _, want := range []string{
		`"rlimits":[{"type":"RLIMIT_NOFILE","hard":20000,"soft":20000},{"type":"RLIMIT_NPROC","hard":32768,"soft":32768},{"type":"RLIMIT_CORE","hard":50,"soft":10}]`,
		`"args":["/bin/sh"]`, `"capabilities":{"bounding":["CAP_CHOWN"]}`, `"root":{"path":"/var/lib/x/merged"}`,
		`"annotations":{"io.podman.annotations.autoremove":"FALSE"}`, `"ociVersion":"1.0.2-dev"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("rewritten config lacks %s:\n%s", want, s)
		}
	}
	if info, err := os.Stat(cfg); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("config mode after rewrite: %v %v", info.Mode(), err)
	}
	if _, err := os.Stat(cfg + ".capfix"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}

	// `podman exec` hands runc a process file whose rlimits are at the top level.
	proc := filepath.Join(dir, "process.json")
	if err := os.WriteFile(proc, []byte(`{"args":["true"],"rlimits":[{"type":"RLIMIT_NOFILE","hard":1048576,"soft":1024}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := clampRlimits(proc, ceilings); err != nil {
		t.Fatal(err)
	}
	if out, _ := os.ReadFile(proc); string(out) != `{"args":["true"],"rlimits":[{"type":"RLIMIT_NOFILE","hard":20000,"soft":1024}]}` {
		t.Errorf("process file = %s", out)
	}
}

// Docker writes no rlimits unless asked, and a host with CAP_SYS_RESOURCE (nil ceilings) can
// grant anything: in both cases the file is not even rewritten.
func TestClampRlimitsLeavesFileAloneWhenEverythingFits(t *testing.T) {
	for _, c := range []struct {
		name, in string
		ceilings map[string]uint64
	}{
		{"no rlimits", `{ "process": { "args": ["sh"] } }`, map[string]uint64{"RLIMIT_NOFILE": 20000}},
		{"within the ceiling", `{ "process": { "rlimits": [ {"type":"RLIMIT_NOFILE","hard":1024,"soft":1024} ] } }`, map[string]uint64{"RLIMIT_NOFILE": 20000}},
		{"unknown resource", `{ "process": { "rlimits": [ {"type":"RLIMIT_FUTURE","hard":9,"soft":9} ] } }`, map[string]uint64{"RLIMIT_NOFILE": 1}},
		{"the process can raise its limits", `{ "process": { "rlimits": [ {"type":"RLIMIT_NOFILE","hard":1048576,"soft":1048576} ] } }`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(cfg, []byte(c.in), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := clampRlimits(cfg, c.ceilings); err != nil {
				t.Fatal(err)
			}
			if out, _ := os.ReadFile(cfg); string(out) != c.in {
				t.Errorf("file rewritten: %s", out)
			}
		})
	}
}

// Whether the wrapper may lower anything is decided by CAP_SYS_RESOURCE in the effective set:
// this machine's (bit 24 clear) and a normal root process's (full set).
func TestHasEffectiveCapReadsTheCapEffMask(t *testing.T) {
	for _, c := range []struct {
		status string
		want   bool
	}{
		{"Name:\tcapfix\nCapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\n", false},
		{"CapEff:\t000001ffffffffff\n", true},
	} {
		got, err := hasEffectiveCap(c.status, capSysResource)
		if err != nil || got != c.want {
			t.Errorf("hasEffectiveCap(%q) = %v, %v; want %v", c.status, got, err, c.want)
		}
	}
	if _, err := hasEffectiveCap("Name:\tx\n", capSysResource); err == nil {
		t.Error("a status without CapEff was accepted")
	}
}
