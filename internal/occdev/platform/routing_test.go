package platform

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
)

func routingPins(t *testing.T, refs ...string) []pins.Image {
	t.Helper()
	var out []pins.Image
	for _, r := range refs {
		img, err := pins.ParseImage(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, img)
	}
	return out
}

// certManager and envoyGateway are the two controllers as the pins name them, pinning refs.
func certManager(t *testing.T, refs ...string) pins.NamedController {
	return pins.NamedController{Name: "cert-manager", Key: pins.KeyRoutingCertManager, RoutingController: &pins.RoutingController{Version: "v1.18.4", Images: routingPins(t, refs...)}}
}

func envoyGateway(t *testing.T, refs ...string) pins.NamedController {
	return pins.NamedController{Name: "Envoy Gateway", Key: pins.KeyRoutingEnvoyGateway, RoutingController: &pins.RoutingController{Version: "v1.6.7", Images: routingPins(t, refs...)}}
}

func digestOf(b byte) string { return "@sha256:" + strings.Repeat(string([]byte{b, b}), 32) }

func readRouting(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "routing", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The release manifests name their images by tag; up runs each by the digest its pin records,
// wherever the manifest names it (a container, a flag naming the image a controller starts
// later, an image in the EnvoyGateway configuration), and leaves the cluster's Gateway API
// CRDs alone.
func TestAdmitRoutingManifestRunsEveryImageByItsPinnedDigest(t *testing.T) {
	cm := certManager(t,
		"quay.io/jetstack/cert-manager-controller:v1.18.4"+digestOf('a'),
		"quay.io/jetstack/cert-manager-cainjector:v1.18.4"+digestOf('b'),
		"quay.io/jetstack/cert-manager-webhook:v1.18.4"+digestOf('c'),
		"quay.io/jetstack/cert-manager-acmesolver:v1.18.4"+digestOf('d'))
	got, err := AdmitRoutingManifest(cm, readRouting(t, "cert-manager.yaml"), "cert-manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var workloads []string
	for _, w := range got.Workloads() {
		workloads = append(workloads, w.String())
	}
	if want := []string{"Deployment cert-manager/cert-manager-cainjector", "Deployment cert-manager/cert-manager", "Deployment cert-manager/cert-manager-webhook"}; !slices.Equal(workloads, want) {
		t.Errorf("workloads %q, want %q", workloads, want)
	}
	all := manifestText(t, got)
	for _, want := range []string{
		`"image":"quay.io/jetstack/cert-manager-controller` + digestOf('a') + `"`,
		`--acme-http01-solver-image=quay.io/jetstack/cert-manager-acmesolver` + digestOf('d') + `"`,
		`"image":"quay.io/jetstack/cert-manager-webhook` + digestOf('c') + `"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the admitted manifest lacks %s:\n%s", want, all)
		}
	}
	if strings.Contains(all, ":v1.18.4") {
		t.Errorf("a tag reference is left:\n%s", all)
	}

	eg := envoyGateway(t, "docker.io/envoyproxy/gateway:v1.6.7"+digestOf('e'), "docker.io/envoyproxy/ratelimit:99d85510"+digestOf('f'))
	got, err = AdmitRoutingManifest(eg, readRouting(t, "envoy-gateway.yaml"), "install.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all = manifestText(t, got)
	for _, want := range []string{
		"image: docker.io/envoyproxy/gateway" + digestOf('e') + `\n`,
		"image: docker.io/envoyproxy/ratelimit" + digestOf('f') + `\n`,
		`"image":"docker.io/envoyproxy/gateway` + digestOf('e') + `"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the admitted manifest lacks %s:\n%s", want, all)
		}
	}
	if strings.Contains(all, ".gateway.networking.k8s.io") || !strings.Contains(all, "securitypolicies.gateway.envoyproxy.io") || !strings.Contains(all, "envoyproxies.gateway.envoyproxy.io") {
		t.Errorf("the Gateway API CRDs are the cluster's, Envoy Gateway's own are applied:\n%s", all)
	}
	if len(got.Left) != 2 || !strings.Contains(got.Left[0], "gatewayclasses.gateway.networking.k8s.io") || !strings.Contains(got.Left[1], "gateways.gateway.networking.k8s.io") {
		t.Errorf("left %q", got.Left)
	}
}

// An image the pins do not fix (here the ACME solver the controller's flag names), and a pin the
// manifest never names, are refused with where the manifest names the image and the pin to add.
func TestAdmitRoutingManifestRefusesAnUnpinnedImage(t *testing.T) {
	cm := certManager(t,
		"quay.io/jetstack/cert-manager-controller:v1.18.4"+digestOf('a'),
		"quay.io/jetstack/cert-manager-cainjector:v1.18.4"+digestOf('b'),
		"quay.io/jetstack/cert-manager-webhook:v1.18.3"+digestOf('c'),
		"quay.io/jetstack/cert-manager-webhook:v1.18.4"+digestOf('c'))
	_, err := AdmitRoutingManifest(cm, readRouting(t, "cert-manager.yaml"), "cert-manager.yaml")
	var unpinned *UnpinnedRoutingImageError
	if !errors.As(err, &unpinned) {
		t.Fatalf("err %v, want an UnpinnedRoutingImageError", err)
	}
	for _, want := range []string{
		"the cert-manager v1.18.4 manifest names images the pins do not fix by digest, so occ will not install it",
		`Deployment cert-manager/cert-manager containers[0] cert-manager-controller flag --acme-http01-solver-image: image "quay.io/jetstack/cert-manager-acmesolver:v1.18.4"; add quay.io/jetstack/cert-manager-acmesolver:v1.18.4@sha256:<digest>`,
		"to routing.certManager.images in the pin file, or leave the pin file's routing section out",
		"routing.certManager.images pins quay.io/jetstack/cert-manager-webhook:v1.18.3" + digestOf('c') + ", which the manifest names nowhere",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if len(unpinned.Unpinned) != 1 || len(unpinned.Unused) != 1 {
		t.Errorf("unpinned %v, unused %v", unpinned.Unpinned, unpinned.Unused)
	}

	// A short name is the same image as its docker.io spelling, and is rewritten whole.
	short := []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\nspec:\n  containers:\n  - name: a\n    image: envoyproxy/gateway:v1.6.7\n  - name: b\n    image: \"docker.io/envoyproxy/gateway:v1.6.7\"\n")
	eg := envoyGateway(t, "docker.io/envoyproxy/gateway:v1.6.7"+digestOf('e'))
	got, err := AdmitRoutingManifest(eg, short, "short.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if all := manifestText(t, got); strings.Count(all, `"image":"docker.io/envoyproxy/gateway`+digestOf('e')+`"`) != 2 {
		t.Errorf("rewritten:\n%s", all)
	}
	found, err := images.FindImages(strings.NewReader(string(short)))
	if err != nil || len(found) != 2 {
		t.Fatalf("FindImages: %v %v", found, err)
	}
}

func manifestText(t *testing.T, c *RoutingController) string {
	t.Helper()
	var b strings.Builder
	for _, o := range c.Objects {
		j, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteString("\n")
	}
	return b.String()
}

// Every container of every workload kind the routing manifests hold gets the plan's pull policy.
func TestRoutingSetPullPolicy(t *testing.T) {
	eg := envoyGateway(t, "docker.io/envoyproxy/gateway:v1.6.7"+digestOf('e'), "docker.io/envoyproxy/ratelimit:99d85510"+digestOf('f'))
	got, err := AdmitRoutingManifest(eg, readRouting(t, "envoy-gateway.yaml"), "install.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := got.SetPullPolicy("Never"); err != nil {
		t.Fatal(err)
	}
	all := manifestText(t, got)
	if strings.Count(all, `"imagePullPolicy":"Never"`) != 2 || strings.Contains(all, `"imagePullPolicy":"IfNotPresent","name":"envoy-gateway`) {
		t.Errorf("pull policies:\n%s", all)
	}
}
