package composeprofile

import (
	"fmt"
	"io"

	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
)

// Document is the Compose profile's plan as the plan document shows it (profile.Document): the
// OCE plan every profile shares and what the project creates and builds.
type Document struct {
	*oce.Plan
	Project
}

var _ profile.Documented = Planned{}

// Document is the profile's plan as the plan document shows it.
func (c Planned) Document() profile.Document {
	if c.Compose == nil {
		return nil
	}
	return &Document{Plan: c.Compose.Plan, Project: c.Compose.Project}
}

// PrintPlan lists what the Compose project would create: services (built or run from an image),
// volumes, networks and published ports.
func (o *Document) PrintPlan(w io.Writer) {
	c := o.Compose
	if c == nil {
		return
	}
	fmt.Fprintf(w, "OCE checkout:    %s at %s (%s)\n", o.Checkout, o.Commit, o.CheckoutSource)
	fmt.Fprintf(w, "Compose project: %s (API %s)\n", c.Project, c.APIURL)
	for i, svc := range c.Services {
		label := "  services:"
		if i > 0 {
			label = ""
		}
		if !svc.Started {
			fmt.Fprintf(w, "%-16s %s: not started (%s)\n", label, svc.Name, svc.Why)
			continue
		}
		what := svc.Image
		if svc.Build != "" {
			what = "built from " + svc.Build
		}
		fmt.Fprintf(w, "%-16s %s (%s): %s\n", label, svc.Name, what, svc.Why)
	}
	o.PrintBaseImages(w)
	for i, v := range c.Volumes {
		label := "  volumes:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-16s %s\n", label, v)
	}
	for _, n := range c.Networks {
		fmt.Fprintf(w, "%-16s %s (subnet %s, gateway %s; the k3d cluster joins it)\n", "  network:", n.Name, n.Subnet, n.Gateway)
	}
	for i, p := range c.Ports {
		label := "  published:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-16s %s -> %s of %s\n", label, p.Host, p.Target, p.Service)
	}
	fmt.Fprintf(w, "Key file:        %s\n", o.KeyFile)
}
