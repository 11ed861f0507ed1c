package openshell

import (
	"path"
	"strings"

	"github.com/openclaw/occ/internal/driver"
)

// Seed sentences of the configureAgent hook.
const (
	msgDedicatedOnly      = "OpenShell SandboxDriver supports only dedicated Harness revisions."
	msgUnsupportedRuntime = "OpenShell SandboxDriver does not support the selected Harness runtime."
)

// ConfigureAgent adapts an Agent's native configuration to run inside an OpenShell Sandbox. It
// never changes the Harness runtime and never modifies its argument (OCC passes it read-only and
// also calls this on status reads, so it must be pure and deterministic).
//
//   - OpenClaw: agents.defaults.workspace, and the workspace of any agents.entries key that
//     lowercases to "main", are pinned to the Sandbox data mount, the only path the Gateway, file
//     transfer and workspace node address. The value is forced rather than refused for the same
//     status-read reason.
//   - Codex: plugins.entries.codex is enabled with appServer.sandbox "danger-full-access" and
//     approvalsReviewer "user", and appServer.networkProxy is removed. Codex's own bubblewrap
//     sandbox cannot run inside OpenShell (nested namespaces are blocked); OpenShell is the
//     containment, and an explicit user reviewer stops the Gateway from forcing workspace-write
//     per turn.
func ConfigureAgent(configuration driver.Configuration, harness driver.Harness, dataMountPath string) (driver.Configuration, error) {
	if harness.Mode != driver.HarnessModeDedicated {
		return nil, unsupported(msgDedicatedOnly, errorf("harness %q has mode %q", harness.ID, harness.Mode))
	}
	out := configuration.Clone()
	if out == nil {
		out = driver.Configuration{}
	}
	switch harness.ID {
	case driver.HarnessOpenClaw:
		agents, err := objectAt(out, "agents")
		if err != nil {
			return nil, err
		}
		defaults, err := objectAt(agents, "defaults", "agents")
		if err != nil {
			return nil, err
		}
		defaults["workspace"] = dataMountPath
		if entries, ok := agents["entries"]; ok && entries != nil {
			m, ok := entries.(map[string]any)
			if !ok {
				return nil, plain("agents.entries must be an object.", nil)
			}
			for key, entry := range m {
				if strings.ToLower(key) != "main" {
					continue
				}
				e, ok := entry.(map[string]any)
				if !ok {
					return nil, plain("agents.entries."+key+" must be an object.", nil)
				}
				e["workspace"] = dataMountPath
			}
		}
	case driver.HarnessCodex:
		plugins, err := objectAt(out, "plugins")
		if err != nil {
			return nil, err
		}
		entries, err := objectAt(plugins, "entries", "plugins")
		if err != nil {
			return nil, err
		}
		codex, err := objectAt(entries, "codex", "plugins.entries")
		if err != nil {
			return nil, err
		}
		codex["enabled"] = true
		cfg, err := objectAt(codex, "config", "plugins.entries.codex")
		if err != nil {
			return nil, err
		}
		appServer, err := objectAt(cfg, "appServer", "plugins.entries.codex.config")
		if err != nil {
			return nil, err
		}
		delete(appServer, "networkProxy")
		appServer["sandbox"] = "danger-full-access"
		appServer["approvalsReviewer"] = "user"
	default:
		return nil, unsupported(msgUnsupportedRuntime, errorf("harness %q", harness.ID))
	}
	return out, nil
}

// objectAt returns parent[key] as an object, creating it when absent. A present non-object
// value is refused rather than replaced: it is the user's data, and silently discarding it
// would change the Agent's behaviour behind their back.
func objectAt(parent map[string]any, key string, parentPath ...string) (map[string]any, error) {
	v, ok := parent[key]
	if !ok || v == nil {
		m := map[string]any{}
		parent[key] = m
		return m, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		desc := key
		if len(parentPath) > 0 {
			desc = parentPath[0] + "." + key
		}
		return nil, plain(desc+" must be an object.", nil)
	}
	return m, nil
}

// WorkspaceSetup is the set of initial files OCC asks to place in a new Agent's workspace.
type WorkspaceSetup struct {
	// Workspace is the absolute workspace directory the files are for.
	Workspace string `json:"workspace"`
	// Files are paths relative to Workspace.
	Files []string `json:"files"`
}

// ValidateWorkspaceSetup admits initial workspace files only for the projected Sandbox data
// mount and only when the configuration's Agent roster is omitted or is exactly one main
// Agent: the Sandbox initializes that one mount privately, so files meant for any other path or
// Agent would silently never appear.
func ValidateWorkspaceSetup(configuration driver.Configuration, harness driver.Harness, dataMountPath string, setup WorkspaceSetup) error {
	if harness.Mode != driver.HarnessModeDedicated {
		return unsupported(msgDedicatedOnly, errorf("harness %q has mode %q", harness.ID, harness.Mode))
	}
	if harness.ID != driver.HarnessCodex && harness.ID != driver.HarnessOpenClaw {
		return unsupported(msgUnsupportedRuntime, errorf("harness %q", harness.ID))
	}
	if path.Clean(setup.Workspace) != dataMountPath || setup.Workspace != dataMountPath {
		return plain("OpenShell admits initial workspace files only for the Sandbox data mount.",
			errorf("workspace %q is not the configured kubernetes.sandboxDataMount.mountPath %q", setup.Workspace, dataMountPath))
	}
	if agents, ok := configuration["agents"].(map[string]any); ok {
		if entries, ok := agents["entries"].(map[string]any); ok {
			if len(entries) != 1 {
				return plain("OpenShell admits initial workspace files only for a single main Agent.",
					errorf("agents.entries lists %d Agents; keep only main or omit the roster", len(entries)))
			}
			for key := range entries {
				if strings.ToLower(key) != "main" {
					return plain("OpenShell admits initial workspace files only for a single main Agent.",
						errorf("agents.entries lists %q; rename it main or omit the roster", key))
				}
			}
		}
	}
	for _, f := range setup.Files {
		if f == "" || path.IsAbs(f) || path.Clean(f) != f || f == "." || f == ".." || strings.HasPrefix(f, "../") {
			return plain("OpenShell initial workspace files must be exact relative paths inside the workspace.",
				errorf("file %q must be relative, normalized and must not leave %s", f, dataMountPath))
		}
	}
	return nil
}
