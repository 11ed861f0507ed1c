package compose

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/compose-spec/compose-go/v2/types"
)

// CheckoutBuiltServices are the services whose image Compose builds from the checkout's
// Dockerfile, in name order.
func (m *Model) CheckoutBuiltServices() []string {
	var out []string
	for _, name := range m.Project.ServiceNames() {
		if b := m.Project.Services[name].Build; b != nil && filepath.Clean(b.Context) == filepath.Clean(m.Checkout) {
			out = append(out, name)
		}
	}
	return out
}

// UseControllerImage runs every checkout-built service from ref instead of building it: the
// controller image an engineer selected explicitly (OCC_DEVELOPMENT_CONTROLLER_IMAGE, validated
// by controlplane.ImageSelection: a sha256 digest reference present on the engine). The pull
// policy becomes never, so Compose uses exactly the local image and never fetches another.
// Call it before WriteSnapshot; start the services with Build false afterwards.
func (m *Model) UseControllerImage(ref string) error {
	services := m.CheckoutBuiltServices()
	for _, required := range RequiredServices {
		if required != ServicePostgres && !slices.Contains(services, required) {
			return fmt.Errorf("use controller image %s: service %s is not built from the checkout, so the selected image would not replace its image; remove the override of its build or image", ref, required)
		}
	}
	for _, name := range services {
		svc := m.Project.Services[name]
		svc.Build = nil
		svc.Image = ref
		svc.PullPolicy = types.PullPolicyNever
		m.Project.Services[name] = svc
	}
	return nil
}
