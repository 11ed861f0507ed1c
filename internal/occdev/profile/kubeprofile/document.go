package kubeprofile

import (
	"fmt"
	"io"

	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
)

// Document is the Kubernetes-only profile's plan as the plan document shows it
// (profile.Document): the OCE plan every profile shares and what the profile installs into the
// cluster.
type Document struct {
	*oce.Plan
	Kubernetes *Plan `json:"kubernetes,omitempty"`
}

var _ profile.Documented = Planned{}

// Document is the profile's plan as the plan document shows it.
func (k Planned) Document() profile.Document {
	if k.OCE == nil {
		return nil
	}
	return &Document{Plan: k.OCE, Kubernetes: k.Kube}
}

// PrintPlan says what the Kubernetes-only profile would run: the checkout, the images it builds
// or uses, and where the API and the key will be (the objects it creates are listed with their
// steps).
func (o *Document) PrintPlan(w io.Writer) {
	k := o.Kubernetes
	if k == nil {
		return
	}
	fmt.Fprintf(w, "OCE checkout:    %s at %s (%s)\n", o.Checkout, o.Commit, o.CheckoutSource)
	if sel := o.SelectedImages; sel != nil {
		fmt.Fprintf(w, "  controller:    %s (selected)\n  Agent runtime: %s (selected)\n", sel.Controller, sel.Runtime)
	} else {
		fmt.Fprintf(w, "  controller:    %s (built)\n  Agent runtime: %s (built)\n", k.ControllerImage, o.RuntimeImage)
	}
	o.PrintBaseImages(w)
	fmt.Fprintf(w, "  PostgreSQL:    %s\n", k.PostgresImage)
	fmt.Fprintf(w, "OCE API:         %s (the API proxy's NodePort 30080, published on loopback)\n", k.APIURL)
	fmt.Fprintf(w, "Key file:        %s\n", o.KeyFile)
}
