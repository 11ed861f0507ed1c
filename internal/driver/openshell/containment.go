package openshell

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/driver"
)

// msgNativeContainment is seed 001's rule for native OpenClaw: its provisioning privatizes the
// writable PVC subpaths for the pinned Gateway's default workload identity, which only holds
// without user namespaces and with a single workspace ServiceAccount.
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
