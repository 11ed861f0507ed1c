package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Podman writes fixed resource limits into every container's configuration (RLIMIT_NOFILE
// 1048576 and RLIMIT_NPROC 32768, whatever --ulimit or default_ulimits say), and runc applies
// them with prlimit from its own process. Raising a hard limit above the caller's needs
// CAP_SYS_RESOURCE; on the project's build machines that capability is outside the bounding set
// and the hard open-files limit is 20000, so runc fails every Podman container with "error
// setting rlimits for ready process: ... operation not permitted". clampRlimits lowers each
// requested limit to what this process could itself set, which is exactly what runc can then
// grant. A process holding CAP_SYS_RESOURCE can raise its limits, so there nothing is lowered.

// clampToOwnLimits lowers the resource limits file asks for to those this process could set.
func clampToOwnLimits(file string) error {
	ceilings, err := rlimitCeilings()
	if err != nil {
		return err
	}
	return clampRlimits(file, ceilings)
}

// rlimitNumbers maps the OCI names of resource limits to Linux's resource numbers.
var rlimitNumbers = map[string]int{
	"RLIMIT_CPU": 0, "RLIMIT_FSIZE": 1, "RLIMIT_DATA": 2, "RLIMIT_STACK": 3, "RLIMIT_CORE": 4,
	"RLIMIT_RSS": 5, "RLIMIT_NPROC": 6, "RLIMIT_NOFILE": 7, "RLIMIT_MEMLOCK": 8, "RLIMIT_AS": 9,
	"RLIMIT_LOCKS": 10, "RLIMIT_SIGPENDING": 11, "RLIMIT_MSGQUEUE": 12, "RLIMIT_NICE": 13,
	"RLIMIT_RTPRIO": 14, "RLIMIT_RTTIME": 15,
}

// capSysResource is CAP_SYS_RESOURCE's bit in the capability masks of /proc/self/status.
const capSysResource = 24

// rlimitCeilings returns, for every known resource, the hard limit this process cannot exceed,
// or nil when it holds CAP_SYS_RESOURCE and so can grant any limit.
func rlimitCeilings() (map[string]uint64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, fmt.Errorf("read effective capabilities: %w", err)
	}
	canRaise, err := hasEffectiveCap(string(status), capSysResource)
	if err != nil {
		return nil, err
	}
	if canRaise {
		return nil, nil
	}
	ceilings := map[string]uint64{}
	for name, resource := range rlimitNumbers {
		var l syscall.Rlimit
		if err := syscall.Getrlimit(resource, &l); err != nil {
			continue // a resource this kernel does not know is left as requested
		}
		ceilings[name] = l.Max
	}
	return ceilings, nil
}

// hasEffectiveCap reports whether capability bit is in the CapEff mask of a /proc status file.
func hasEffectiveCap(status string, bit uint) (bool, error) {
	for _, line := range strings.Split(status, "\n") {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return false, fmt.Errorf("parse CapEff %q: %w", strings.TrimSpace(hex), err)
		}
		return mask&(1<<bit) != 0, nil
	}
	return false, errors.New("read effective capabilities: no CapEff line in /proc/self/status")
}

// rlimit is one entry of an OCI process's "rlimits" list.
type rlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

// clampRlimits lowers every resource limit in file above its ceiling to the ceiling (the soft
// limit too, since it may not exceed the hard one). file is an OCI runtime config (rlimits under
// "process") or a process spec (rlimits at the top level). Only the rlimits list is rewritten;
// every other field passes through byte for byte, and the file is left untouched when nothing is
// above its ceiling (always so with nil ceilings).
func clampRlimits(file string, ceilings map[string]uint64) error {
	if len(ceilings) == 0 {
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
		if changed, err = lowerRlimits(p, ceilings); err != nil {
			return fmt.Errorf("%s process: %w", file, err)
		}
		if changed {
			if doc["process"], err = json.Marshal(p); err != nil {
				return err
			}
		}
	} else if changed, err = lowerRlimits(doc, ceilings); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if !changed {
		return nil
	}
	return rewrite(file, doc)
}

// lowerRlimits edits the "rlimits" member of a process object in place and reports whether any
// limit was lowered.
func lowerRlimits(process map[string]json.RawMessage, ceilings map[string]uint64) (bool, error) {
	raw, ok := process["rlimits"]
	if !ok {
		return false, nil
	}
	var limits []rlimit
	if err := json.Unmarshal(raw, &limits); err != nil {
		return false, fmt.Errorf("parse rlimits: %w", err)
	}
	changed := false
	for i, l := range limits {
		ceiling, known := ceilings[l.Type]
		if !known || l.Hard <= ceiling {
			continue
		}
		limits[i].Hard = ceiling
		limits[i].Soft = min(l.Soft, ceiling)
		changed = true
	}
	if !changed {
		return false, nil
	}
	out, err := json.Marshal(limits)
	if err != nil {
		return false, err
	}
	process["rlimits"] = out
	return true, nil
}

// rewrite replaces file with doc, keeping the file's mode; the rename makes the change atomic
// for runc, which reads the file after capfix has handed over.
func rewrite(file string, doc map[string]json.RawMessage) error {
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
