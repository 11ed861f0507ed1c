package online

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online/onlinetest"
)

// routingTestdata holds the stand-ins of the two routing manifests.
const routingTestdata = "../../platform/testdata/routing"

// An engineer on a networked host pins the routing controllers' images once: resolve downloads
// both manifests, checks them against their pins, and records every image they name (four of
// cert-manager's, including the ACME solver its flag names; two of Envoy Gateway's, including
// the rate-limit image of its configuration) by the manifest's tag and the digest of its
// multi-platform index. The written file loads, installs routing, and drops the old note.
func TestResolveRoutingRecordsEveryImageTheManifestsName(t *testing.T) {
	w, digests := onlinetest.RoutingWorld(t, routingTestdata, false)
	res, err := ResolveRouting(context.Background(), w.Set, Deps{})
	if err != nil {
		t.Fatalf("ResolveRouting: %v", err)
	}
	var got []string
	for _, c := range res.Set.Routing.Controllers() {
		for _, img := range c.Images {
			got = append(got, c.Key+" "+img.String())
		}
	}
	h := w.Reg.Host + "/"
	want := []string{
		"routing.certManager " + h + "jetstack/cert-manager-cainjector:v1.18.4@" + digests["jetstack/cert-manager-cainjector:v1.18.4"],
		"routing.certManager " + h + "jetstack/cert-manager-controller:v1.18.4@" + digests["jetstack/cert-manager-controller:v1.18.4"],
		"routing.certManager " + h + "jetstack/cert-manager-acmesolver:v1.18.4@" + digests["jetstack/cert-manager-acmesolver:v1.18.4"],
		"routing.certManager " + h + "jetstack/cert-manager-webhook:v1.18.4@" + digests["jetstack/cert-manager-webhook:v1.18.4"],
		"routing.envoyGateway " + h + "envoyproxy/ratelimit:99d85510@" + digests["envoyproxy/ratelimit:99d85510"],
		"routing.envoyGateway " + h + "envoyproxy/gateway:v1.6.7@" + digests["envoyproxy/gateway:v1.6.7"],
	}
	if !slices.Equal(got, want) {
		t.Errorf("resolved\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Manifests) != 2 || len(res.Images) != 6 || len(res.DroppedNotes) != 1 || res.DroppedNotes[0].Pin != pins.KeyRouting {
		t.Errorf("result %+v", res)
	}
	data, err := res.Encode(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	back, err := pins.Parse(data, "resolved")
	if err != nil || !back.Routing.Resolved() || len(back.RoutingImages()) != 6 {
		t.Errorf("the written file: %v", err)
	}
	if rep := verify(t, back); len(misses(rep)) > 0 {
		t.Errorf("verify of the resolved set misses:\n%s", strings.Join(misses(rep), "\n"))
	}
}

// A single-platform image and a manifest that is not the pinned one are refused together, each
// naming its pin.
func TestResolveRoutingRefusesWhatCannotBePinned(t *testing.T) {
	w, _ := onlinetest.RoutingWorld(t, routingTestdata, true)
	w.Set.Routing.CertManager.Manifest.SHA256 = strings.Repeat("0", 64)
	_, err := ResolveRouting(context.Background(), w.Set, Deps{})
	if err == nil {
		t.Fatal("resolved")
	}
	for _, want := range []string{"cannot pin the routing controllers' images", "routing.certManager.manifest", "not the pinned " + strings.Repeat("0", 64),
		"routing.envoyGateway.images: image " + w.Reg.Host + "/envoyproxy/ratelimit:99d85510 is a single-platform", "without linux/arm64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	w.Set.Routing = nil
	if _, err := ResolveRouting(context.Background(), w.Set, Deps{}); err == nil || !strings.Contains(err.Error(), "have no routing section") {
		t.Errorf("no routing section: %v", err)
	}
}
