package openshell

import (
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/driver"
)

// msgNativeContainment is the SandboxDriver's rule for native OpenClaw: its provisioning
// privatizes the writable PVC subpaths for the pinned Gateway's default workload identity, which
// only holds without user namespaces and with a single workspace ServiceAccount.
const msgNativeContainment = "OpenShell cannot contain dedicated OpenClaw with this Sandbox configuration. Native provisioning privatizes writable PVC subpaths before Sandbox creation. " +
	"It needs kubernetes.userNamespaces: false, at most one gateway.operatorWorkspaceResources ServiceAccount and the pinned Gateway's default identity, without UID/GID overrides; Agent save refuses dedicated OpenClaw otherwise."

// checkNativeContainment refuses a dedicated OpenClaw revision when the configuration breaks
// native OpenClaw's containment. Agent save (ConfigureAgent), workspace setup and provisioning
// all call it before anything is sent or applied. Other Harnesses are not affected.
func (d *Driver) checkNativeContainment(h driver.Harness) error {
	if h.Mode != driver.HarnessModeDedicated || h.ID != driver.HarnessOpenClaw {
		return nil
	}
	var problems []string
	// An omitted userNamespaces is rendered as an explicit false for native OpenClaw (see
	// userNamespaces), so only true breaks the rule.
	if un := d.cfg.Kubernetes.UserNamespaces; un != nil && *un {
		problems = append(problems, "kubernetes.userNamespaces is true: set it to false")
	}
	var accounts []string
	for _, o := range d.cfg.Gateway.OperatorWorkspaceResources {
		gv, err := schema.ParseGroupVersion(o.GetAPIVersion())
		if err == nil && contract.IsServiceAccount(gv.WithKind(o.GetKind())) {
			accounts = append(accounts, o.GetName())
		}
	}
	if len(accounts) > 1 {
		problems = append(problems, "gateway.operatorWorkspaceResources has "+strconv.Itoa(len(accounts))+" ServiceAccounts ("+strings.Join(accounts, ", ")+"): keep only the workspace chart's sandbox ServiceAccount")
	}
	if len(problems) == 0 {
		return nil
	}
	return unsupported(msgNativeContainment, errorf("%s", strings.Join(problems, "; ")))
}

// userNamespaces is the template's user_namespaces for the Harness: the configured value, and
// for native OpenClaw an explicit false when the configuration omits it, so its containment
// never depends on the gateway's default.
func (d *Driver) userNamespaces(h driver.Harness) *bool {
	un := d.cfg.Kubernetes.UserNamespaces
	if un == nil && h.ID == driver.HarnessOpenClaw {
		off := false
		return &off
	}
	return un
}

// msgNativeRoster is the rule on native OpenClaw rosters: the hook pins only the
// defaults' and the main Agent's workspace to the Sandbox data mount, which is what the
// Gateway, file transfer and the workspace node address, so the main Agent must stay the
// default.
const msgNativeRoster = "OpenShell dedicated OpenClaw serves the main Agent, whose workspace is the Sandbox data mount: admission refuses a roster that makes another Agent the default."

// checkNativeRoster refuses a dedicated OpenClaw configuration whose roster marks an Agent
// other than main as the default, in agents.entries (keyed by Agent ID, main in any case) or
// in agents.list (entries with an id). Saving (ConfigureAgent), workspace setup, render and
// provisioning all call it; other Harnesses are not affected.
func checkNativeRoster(configuration driver.Configuration, h driver.Harness) error {
	if h.Mode != driver.HarnessModeDedicated || h.ID != driver.HarnessOpenClaw {
		return nil
	}
	agents, _ := configuration["agents"].(map[string]any)
	var marked []string
	if entries, ok := agents["entries"].(map[string]any); ok {
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e, _ := entries[k].(map[string]any)
			if isDefault(e) && !strings.EqualFold(k, mainAgent) {
				marked = append(marked, "agents.entries."+k+".default")
			}
		}
	}
	if list, ok := agents["list"].([]any); ok {
		for i, item := range list {
			e, _ := item.(map[string]any)
			if id, _ := e["id"].(string); isDefault(e) && !strings.EqualFold(id, mainAgent) {
				marked = append(marked, "agents.list["+strconv.Itoa(i)+"].default")
			}
		}
	}
	if len(marked) == 0 {
		return nil
	}
	return plain(msgNativeRoster, errorf("%s is true; remove it, so main stays the default Agent", strings.Join(marked, " and ")))
}

// mainAgent is the Agent ID of the Agent a dedicated OpenClaw Harness serves.
const mainAgent = "main"

// isDefault reports whether a roster entry marks its Agent as the default.
func isDefault(entry map[string]any) bool {
	b, _ := entry["default"].(bool)
	return b
}
