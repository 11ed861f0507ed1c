package state

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
)

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Selections are the local inputs `up` used in place of the pinned downloads, and the node's DNS
// resolver it chose. They are recorded so `status` can say what the environment was made from;
// `down` needs none of them (the node's resolv.conf lives in the state directory and goes with
// it).
type Selections struct {
	// GatewayChart and WorkspaceChart are the absolute paths of the OpenShell charts selected
	// instead of those of the pinned archive (a chart directory or a packaged chart).
	GatewayChart   string `json:"gatewayChart,omitempty"`
	WorkspaceChart string `json:"workspaceChart,omitempty"`
	// AgentSandboxManifest is the absolute path of the Agent Sandbox manifest used instead of the
	// pinned download, and AgentSandboxManifestSHA256 its content digest when `up` read it.
	AgentSandboxManifest       string `json:"agentSandboxManifest,omitempty"`
	AgentSandboxManifestSHA256 string `json:"agentSandboxManifestSHA256,omitempty"`
	// DNSResolver is the IPv4 address written into the k3d node's resolv.conf.
	DNSResolver string `json:"dnsResolver,omitempty"`
	// Bundle is the absolute path of the bundle (occ dev bundle create) the pinned images and
	// downloads came from, and BundlePins the digest of the pin set it was made from.
	Bundle     string `json:"bundle,omitempty"`
	BundlePins string `json:"bundlePins,omitempty"`
	// Offline records an up that refused every pull and download.
	Offline bool `json:"offline,omitempty"`
}

func (s *Selections) clone() *Selections {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

func (s *Selections) validate() error {
	if s == nil {
		return nil
	}
	var errs []error
	for key, p := range map[string]string{"selections.gatewayChart": s.GatewayChart, "selections.workspaceChart": s.WorkspaceChart, "selections.agentSandboxManifest": s.AgentSandboxManifest, "selections.bundle": s.Bundle} {
		if p != "" && !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("%s %q must be an absolute path", key, p))
		}
	}
	if (s.GatewayChart == "") != (s.WorkspaceChart == "") {
		errs = append(errs, errors.New("selections.gatewayChart and selections.workspaceChart are recorded together or not at all"))
	}
	if d := s.AgentSandboxManifestSHA256; d != "" && !sha256Pattern.MatchString(d) {
		errs = append(errs, fmt.Errorf("selections.agentSandboxManifestSHA256 %q must be 64 lower-case hex digits", d))
	}
	if d := s.BundlePins; d != "" && !sha256Pattern.MatchString(d) {
		errs = append(errs, fmt.Errorf("selections.bundlePins %q must be 64 lower-case hex digits", d))
	}
	if r := s.DNSResolver; r != "" {
		if a, err := netip.ParseAddr(r); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("selections.dnsResolver %q must be an IPv4 address", r))
		}
	}
	return errors.Join(errs...)
}
