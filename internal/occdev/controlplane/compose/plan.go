package compose

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Plan is what `dev up --dry-run` shows of the Compose stage: what would be created, from the
// checked model, without contacting the engine.
type Plan struct {
	Project  string          `json:"project"`
	APIURL   string          `json:"apiURL"`
	Services []PlanService   `json:"services"`
	Volumes  []string        `json:"volumes"`
	Networks []PlanNetwork   `json:"networks"`
	Ports    []PlanPublished `json:"publishedPorts"`
}

// PlanService is one service of the merged model: what `up` does with it and why, and for a
// started one what it runs.
type PlanService struct {
	Name    string `json:"name"`
	Started bool   `json:"started"`
	Why     string `json:"why"`
	// LeftOut says the Compose options add it and it cannot run in this profile.
	LeftOut bool `json:"leftOut,omitempty"`
	// Image is the image run, or "" when it is built.
	Image string `json:"image,omitempty"`
	// Build says what is built ("<checkout> target development").
	Build string `json:"build,omitempty"`
}

// PlanNetwork is a network and its addressing.
type PlanNetwork struct {
	Name    string `json:"name"`
	Subnet  string `json:"subnet,omitempty"`
	Gateway string `json:"gateway,omitempty"`
}

// PlanPublished is a loopback publication.
type PlanPublished struct {
	Service string `json:"service"`
	Host    string `json:"host"`
	Target  string `json:"target"`
}

// HostPorts are the host ports the model's started services publish (every port of a range).
func (m *Model) HostPorts() []int {
	var ports []int
	for _, name := range m.StartedServices() {
		for _, port := range m.Project.Services[name].Ports {
			first, last, ok := strings.Cut(port.Published, "-")
			if !ok {
				last = first
			}
			lo, err1 := strconv.Atoi(first)
			hi, err2 := strconv.Atoi(last)
			if err1 != nil || err2 != nil {
				continue
			}
			for p := lo; p <= hi && hi-lo < 1<<16; p++ {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// Plan describes the model for a dry run: every service (started ones in start order, then the
// others with the reason), and the volumes, networks and loopback publications of the started.
func (m *Model) Plan() Plan {
	p := Plan{Project: m.Project.Name, APIURL: m.APIURL, Volumes: NamesOf(m.Project).Volumes}
	for _, st := range m.Services() {
		ps := PlanService{Name: st.Name, Started: st.Started, Why: st.Why, LeftOut: st.LeftOut}
		svc, ok := m.Project.Services[st.Name]
		if !ok || !st.Started {
			p.Services = append(p.Services, ps)
			continue
		}
		if svc.Build != nil {
			ps.Build = svc.Build.Context
			if svc.Build.Target != "" {
				ps.Build += " target " + svc.Build.Target
			}
		} else {
			ps.Image = svc.Image
		}
		p.Services = append(p.Services, ps)
		for _, port := range svc.Ports {
			proto := port.Protocol
			if proto == "" {
				proto = "tcp"
			}
			p.Ports = append(p.Ports, PlanPublished{Service: st.Name, Host: net.JoinHostPort(port.HostIP, port.Published), Target: fmt.Sprintf("%d/%s", port.Target, proto)})
		}
	}
	for _, k := range sortedKeys(m.Project.Networks) {
		n := m.Project.Networks[k]
		pn := PlanNetwork{Name: n.Name}
		if len(n.Ipam.Config) > 0 {
			pn.Subnet, pn.Gateway = n.Ipam.Config[0].Subnet, n.Ipam.Config[0].Gateway
		}
		p.Networks = append(p.Networks, pn)
	}
	return p
}
