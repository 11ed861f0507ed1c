package openshell

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/installation"
)

// The runtime home (/sandbox/.openclaw-runtime) lives on its own per-revision PVC subpath. A
// data mount configured on that subpath (an Installation built without validation), or an
// approved Harness mount on it, would put the workspace or another mount into the runtime's
// directory: render refuses both, naming the subpath.
func TestRenderRefusesMountsOnTheRuntimeSubPath(t *testing.T) {
	hctx := openclawContext(testNamespace)
	runtime := runtimeSubPath(hctx.Revision.ID)
	d := newTestDriver(t, func(c *installation.SandboxConfiguration) { c.Kubernetes.SandboxDataMount.SubPath = runtime })
	h := hctx
	h.Requirements.Mounts = []driver.WorkspaceMount{{ClaimName: "agent-data", SubPath: runtime, MountPath: "/sandbox/enterprise"}}
	if _, err := d.RenderCreateSandbox(h); err == nil || !strings.Contains(err.Error(), "separate PVC subpath") {
		t.Errorf("a data mount on the runtime subpath %s: %v", runtime, err)
	}
	d = newTestDriver(t, nil)
	h = openclawContext(testNamespace)
	h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: h.Requirements.Mounts[0].ClaimName, SubPath: runtime + "/cache", MountPath: "/home/node/.cache"})
	if _, err := d.RenderCreateSandbox(h); err == nil || !strings.Contains(err.Error(), "separate PVC subpath") {
		t.Errorf("an approved mount below the runtime subpath: %v", err)
	}
}
