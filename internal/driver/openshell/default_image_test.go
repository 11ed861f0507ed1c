package openshell

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	openshellv1 "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// The development Gateway's configuration carries a default image for Sandboxes whose request
// names none (gateway.toml's default_image, a :latest tag occ does not pin). It is never
// started for OCE: every CreateSandbox the driver sends names the Harness image, for each
// Harness kind, and a Harness without an image is refused before anything reaches the Gateway.
func TestEveryCreateSandboxNamesItsImage(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	var want []string
	for i, harness := range []string{driver.HarnessCodex, driver.HarnessOpenClaw} {
		h := e.attach(d, withRevision(e.hctx(harness), "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f3"+string(rune('1'+i))))
		want = append(want, h.Requirements.Image)
		if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
			t.Fatalf("provision %s: %v", harness, err)
		}
	}
	creates := e.gw.Journal().Method("CreateSandbox")
	if len(creates) != len(want) {
		t.Fatalf("%d CreateSandbox calls, want %d", len(creates), len(want))
	}
	for i, c := range creates {
		img := c.Request.(*openshellv1.CreateSandboxRequest).GetSpec().GetTemplate().GetImage()
		if img == "" || img != want[i] {
			t.Errorf("CreateSandbox %d names image %q, want the Harness image %q", i, img, want[i])
		}
	}

	// A Harness whose image is empty or blank is refused before anything reaches the Gateway.
	for i, tc := range []struct{ image, want string }{
		{"", "OpenShell requires the Harness image."},
		{" ", "OpenShell requires the Harness image."},
	} {
		e.gw.Journal().Reset()
		h := e.attach(d, withRevision(e.hctx(driver.HarnessCodex), "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f4"+string(rune('0'+i))))
		h.Requirements.Image = tc.image
		if _, err := d.ProvisionHarness(e.ctx, h); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("provision with image %q: %v, want %q", tc.image, err, tc.want)
		}
		if n := len(e.gw.Journal().Method("CreateSandbox")); n != 0 {
			t.Errorf("a Harness with image %q reached the Gateway: %d CreateSandbox calls", tc.image, n)
		}
	}
}
