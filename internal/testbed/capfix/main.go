// Command capfix is test-bed plumbing, not product code: an OCI runtime that sits between the
// private dockerd of scripts/testdocker and the real runc on machines whose capability bounding
// set is smaller than the full set.
//
// Docker's privileged mode asks runc for every capability the engine knows. On the project's
// build machines the bounding set lacks CAP_SYS_RESOURCE, so runc cannot grant it and every
// privileged container or exec fails with "unable to apply caps: operation not permitted". k3d
// makes every node container and every exec privileged, with no switch to turn that off. capfix
// reads its own bounding set (inherited from the daemon), removes capabilities outside it from
// the bundle's config.json (runc create and run) and from the --process file (runc exec), and
// then replaces itself with the real runc, passing the same arguments.
//
// On a host whose bounding set is complete (a normal laptop or CI runner) nothing is removed and
// capfix is a plain pass-through. It never adds a capability, and it leaves every other field of
// the runtime configuration as runc would have read it.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "capfix: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	runc, err := realRunc()
	if err != nil {
		return err
	}
	if file := specFile(args); file != "" {
		bounding, err := boundingSet()
		if err != nil {
			return err
		}
		if err := dropMissing(file, bounding); err != nil {
			return err
		}
		if err := clampToOwnLimits(file); err != nil {
			return err
		}
	}
	argv := append([]string{runc}, args...)
	if err := syscall.Exec(runc, argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", runc, err)
	}
	return nil
}

// realRunc finds the runc binary to hand over to. OCC_CAPFIX_RUNC wins; otherwise the first
// runc on PATH that is not this program (an operator may have put capfix on PATH as "runc").
func realRunc() (string, error) {
	if p := os.Getenv("OCC_CAPFIX_RUNC"); p != "" {
		return p, nil
	}
	self, _ := os.Executable()
	selfInfo, _ := os.Stat(self)
	dirs := filepath.SplitList(os.Getenv("PATH"))
	// The shim may run with a minimal PATH; these are where distributions install runc.
	dirs = append(dirs, "/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin")
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "runc")
		info, err := os.Stat(p)
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			continue
		}
		if selfInfo != nil && os.SameFile(info, selfInfo) {
			continue
		}
		return p, nil
	}
	return "", errors.New("find runc: no runc binary on PATH or in the usual system directories (set OCC_CAPFIX_RUNC to its path)")
}

// globalValueFlags are runc's global options that take a separate value; they come before the
// subcommand, so the value must not be mistaken for it.
var globalValueFlags = map[string]bool{
	"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true,
}

// specFile returns the JSON file whose capabilities runc will apply for this invocation: the
// bundle's config.json for create and run, the --process file for exec, or "" when runc will
// not apply capabilities from a file (every other subcommand, or exec with inline arguments).
func specFile(args []string) string {
	i := 0
	for i < len(args) {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		if globalValueFlags[a] {
			i++
		}
		i++
	}
	if i >= len(args) {
		return ""
	}
	cmd, rest := args[i], args[i+1:]
	switch cmd {
	case "create", "run":
		bundle := flagValue(rest, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		return filepath.Join(bundle, "config.json")
	case "exec":
		return flagValue(rest, "--process", "-p")
	}
	return ""
}

// flagValue finds a flag's value in the forms "--name value", "--name=value", "-n value" and
// "-n=value", as runc's command-line parser accepts them.
func flagValue(args []string, long, short string) string {
	for i, a := range args {
		if a == "--" {
			return ""
		}
		for _, name := range []string{long, short} {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v
			}
		}
	}
	return ""
}

// capNames maps the capability numbers of Linux 5.9+ to the names the OCI spec uses.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// boundingSet returns the names of the known capabilities that are NOT in this process's
// bounding set, read from the CapBnd line of /proc/self/status.
func boundingSet() (missing map[string]bool, err error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("read capability bounding set: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		hex, ok := strings.CutPrefix(line, "CapBnd:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("parse CapBnd %q: %w", strings.TrimSpace(hex), err)
		}
		missing = map[string]bool{}
		for bit, name := range capNames {
			if mask&(1<<uint(bit)) == 0 {
				missing[name] = true
			}
		}
		return missing, nil
	}
	return nil, errors.New("read capability bounding set: no CapBnd line in /proc/self/status")
}

// dropMissing removes the missing capabilities from every capability set in file, which is
// either an OCI runtime config (capabilities under "process") or a process spec (capabilities
// at the top level). Only the capability lists are rewritten; every other field passes through
// byte for byte. The file is left untouched when nothing needs removing.
func dropMissing(file string, missing map[string]bool) error {
	if len(missing) == 0 {
		return nil
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("parse %s: %w", file, err)
	}
	changed := false
	if proc, ok := doc["process"]; ok {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(proc, &p); err != nil {
			return fmt.Errorf("parse %s process: %w", file, err)
		}
		if changed, err = filterCaps(p, missing); err != nil {
			return fmt.Errorf("%s process: %w", file, err)
		}
		if changed {
			if doc["process"], err = json.Marshal(p); err != nil {
				return err
			}
		}
	} else if changed, err = filterCaps(doc, missing); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	tmp := file + ".capfix"
	if err := os.WriteFile(tmp, out, info.Mode().Perm()); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("replace %s: %w", file, err)
	}
	return nil
}

// filterCaps edits the "capabilities" member of a process object in place and reports whether
// any set lost a capability.
func filterCaps(process map[string]json.RawMessage, missing map[string]bool) (bool, error) {
	raw, ok := process["capabilities"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return false, nil
	}
	var sets map[string][]string
	if err := json.Unmarshal(raw, &sets); err != nil {
		return false, fmt.Errorf("parse capabilities: %w", err)
	}
	changed := false
	for name, caps := range sets {
		kept := caps[:0:0]
		for _, c := range caps {
			if missing[c] {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		sets[name] = kept
	}
	if !changed {
		return false, nil
	}
	out, err := json.Marshal(sets)
	if err != nil {
		return false, err
	}
	process["capabilities"] = out
	return true, nil
}
