package compose

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
)

// fillGateway gives every IPAM pool of the development network without a gateway the subnet's
// first address. k3d joins this network and OCE trusts the bridge (OCC_HOST 0.0.0.0 with
// OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR), so its addressing must be fixed and known before
// anything runs, not chosen by the engine.
func (m *Model) fillGateway() []Violation {
	nw, ok := m.Project.Networks[NetworkKey]
	if !ok || len(nw.Ipam.Config) == 0 {
		return []Violation{{Key: "networks." + NetworkKey + ".ipam.config", Value: "",
			Rule: "Kubernetes development requires a Compose development network subnet",
			Fix:  "keep the ipam.config subnet of the " + NetworkKey + " network in compose.yaml (OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR sets it)"}}
	}
	var out []Violation
	for i, pool := range nw.Ipam.Config {
		key := fmt.Sprintf("networks.%s.ipam.config[%d]", NetworkKey, i)
		prefix, err := netip.ParsePrefix(pool.Subnet)
		if pool.Subnet == "" || err != nil {
			out = append(out, Violation{Key: key + ".subnet", Value: pool.Subnet,
				Rule: "Kubernetes development requires a Compose development network subnet",
				Fix:  "set a CIDR such as 172.30.41.0/24 (OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR)"})
			continue
		}
		if pool.Gateway == "" {
			first := prefix.Masked().Addr().Next()
			if !prefix.Contains(first) {
				out = append(out, Violation{Key: key + ".subnet", Value: pool.Subnet,
					Rule: "the development subnet has no address for a gateway", Fix: "use a subnet of at least /30"})
				continue
			}
			pool.Gateway = first.String()
		}
		if i == 0 {
			m.Network.Subnet, m.Network.Gateway = pool.Subnet, pool.Gateway
		}
	}
	m.Network.Name = nw.Name
	return out
}

// checkOwnership requires every volume and network to be created and owned by this project:
// not external, named <project>_<key>, and (checked separately against the engine) absent. A
// fresh database and bootstrap volume is what makes bootstrap write a new key; an adopted one
// would make it write none.
func (m *Model) checkOwnership() []Violation {
	var out []Violation
	p := m.Project
	for _, key := range sortedKeys(p.Volumes) {
		v := p.Volumes[key]
		want := p.Name + "_" + key
		if v.External {
			out = append(out, Violation{Key: "volumes." + key + ".external", Value: "true",
				Rule: "Kubernetes development cannot use external volumes",
				Fix:  "remove external so Compose creates " + want})
		} else if v.Name != want {
			out = append(out, Violation{Key: "volumes." + key + ".name", Value: v.Name,
				Rule: "every volume must carry its Compose-owned name <project>_<key>",
				Fix:  "remove the name override so Compose names it " + want})
		}
	}
	for _, key := range sortedKeys(p.Networks) {
		n := p.Networks[key]
		want := p.Name + "_" + key
		if n.External {
			out = append(out, Violation{Key: "networks." + key + ".external", Value: "true",
				Rule: "Kubernetes development cannot use external networks",
				Fix:  "remove external so Compose creates " + want})
		} else if n.Name != want {
			out = append(out, Violation{Key: "networks." + key + ".name", Value: n.Name,
				Rule: "every network must carry its Compose-owned name <project>_<key>",
				Fix:  "remove the name override so Compose names it " + want})
		}
	}
	for _, name := range p.ServiceNames() {
		if cn := p.Services[name].ContainerName; cn != "" {
			out = append(out, Violation{Service: name, Key: "container_name", Value: cn,
				Rule: "service " + name + " must use a Compose-owned container name",
				Fix:  "remove container_name so Compose names the container after the project"})
		}
	}
	return out
}

// checkServices requires the services the flow starts, waits for or execs into, each on the
// development network rather than another network mode.
func (m *Model) checkServices() []Violation {
	var out []Violation
	p := m.Project
	for _, name := range RequiredServices {
		svc, ok := p.Services[name]
		if !ok {
			fix := "keep the " + name + " service of the checkout's compose files"
			if d, disabled := p.DisabledServices[name]; disabled {
				fix = fmt.Sprintf("it is disabled by profile %s; enable that profile or remove it from the service", strings.Join(d.Profiles, ","))
			}
			out = append(out, Violation{Service: name, Key: "services." + name, Value: "",
				Rule: "the development stack requires service " + name, Fix: fix})
			continue
		}
		if svc.NetworkMode != "" {
			out = append(out, Violation{Service: name, Key: "network_mode", Value: svc.NetworkMode,
				Rule: "service " + name + " must use the " + NetworkKey + " network, not a network mode",
				Fix:  "remove network_mode"})
		} else if _, on := svc.Networks[NetworkKey]; !on {
			out = append(out, Violation{Service: name, Key: "networks", Value: strings.Join(sortedKeys(svc.Networks), ","),
				Rule: "service " + name + " must join the " + NetworkKey + " network",
				Fix:  "keep networks: [" + NetworkKey + "]"})
		}
	}
	return out
}

// checkPublications requires every published port of every service to bind loopback with an
// explicit host port, and takes the API URL from the controller's 3000/tcp publication. A
// publication on another interface would put the development database or an administrator
// API on the network; an engine-chosen port would leave occ guessing the API URL.
func (m *Model) checkPublications() []Violation {
	var out []Violation
	p := m.Project
	for _, name := range p.ServiceNames() {
		for i, port := range p.Services[name].Ports {
			value := describePort(port)
			key := fmt.Sprintf("ports[%d]", i)
			if port.HostIP != "127.0.0.1" && port.HostIP != "::1" {
				out = append(out, Violation{Service: name, Key: key, Value: value,
					Rule: "every publication must bind loopback (127.0.0.1 or ::1)",
					Fix:  fmt.Sprintf("publish it as \"127.0.0.1:%s:%d\"", orPort(port.Published), port.Target)})
				continue
			}
			if n, err := strconv.Atoi(port.Published); err != nil || n < 1 || n > 65535 {
				out = append(out, Violation{Service: name, Key: key, Value: value,
					Rule: "every publication must name one explicit host port",
					Fix:  fmt.Sprintf("publish it as \"%s:<port>:%d\"", hostIP(port.HostIP), port.Target)})
				continue
			}
			if name == ServiceController && port.Target == APIPort && (port.Protocol == "" || port.Protocol == "tcp") && m.APIURL == "" {
				m.APIURL = "http://" + net.JoinHostPort(port.HostIP, port.Published)
			}
		}
	}
	if _, ok := p.Services[ServiceController]; ok && m.APIURL == "" && len(out) == 0 {
		out = append(out, Violation{Service: ServiceController, Key: "ports", Value: describePorts(p.Services[ServiceController].Ports),
			Rule: fmt.Sprintf("the API URL is the controller's publication of %d/tcp, and there is none", APIPort),
			Fix:  fmt.Sprintf("publish it as \"127.0.0.1:${OPENCLAW_DEV_PORT:-3000}:%d\"", APIPort)})
	}
	return out
}

func describePort(p types.ServicePortConfig) string {
	s := fmt.Sprintf("%d", p.Target)
	if p.Published != "" {
		s = p.Published + ":" + s
	}
	if p.HostIP != "" {
		s = hostIP(p.HostIP) + ":" + s
	}
	if p.Protocol != "" && p.Protocol != "tcp" {
		s += "/" + p.Protocol
	}
	return s
}

func describePorts(ports []types.ServicePortConfig) string {
	var s []string
	for _, p := range ports {
		s = append(s, describePort(p))
	}
	return strings.Join(s, ", ")
}

func hostIP(ip string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]"
	}
	return ip
}

func orPort(published string) string {
	if published == "" {
		return "<port>"
	}
	return published
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// NamesOf returns the engine-side volume and network names of a loaded model or snapshot.
func NamesOf(p *types.Project) Names {
	var n Names
	for _, k := range sortedKeys(p.Volumes) {
		n.Volumes = append(n.Volumes, p.Volumes[k].Name)
	}
	for _, k := range sortedKeys(p.Networks) {
		n.Networks = append(n.Networks, p.Networks[k].Name)
	}
	n.Networks = slices.Compact(n.Networks)
	for _, name := range p.ServiceNames() {
		n.Containers = append(n.Containers, p.Name+"-"+name+"-1")
	}
	return n
}
