package k3d

import (
	"errors"
	"strconv"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/option"
)

// How the provider's settings are named in messages: flag and variable.
const (
	optClusterName   = "--cluster-name (" + EnvClusterName + ")"
	optAPIPort       = "--api-port (" + EnvAPIPort + ")"
	optDiskThreshold = "--disk-threshold-percent (" + EnvDiskThresholdPercent + ")"
	optDNSResolver   = "--k3d-dns-resolver (" + EnvDNSResolver + ")"
)

// purpose is what each of the provider's settings does, for another provider's refusal.
const purpose = "configures the k3d cluster occ creates"

// Registration is the k3d provider as the flow registers it: its settings, the plan it decides
// from them (Settings) and the live ClusterProvider.
func Registration() cluster.Registration {
	return cluster.Registration{
		Name:    Name,
		Given:   given,
		Resolve: resolve,
		Open:    func() cluster.Provider { return &ClusterProvider{} },
	}
}

// given lists the provider's settings the user set; auto is the resolver's default, not a
// choice.
func given(o cluster.Options) []cluster.Setting {
	var out []cluster.Setting
	for _, s := range []struct {
		set       bool
		name, val string
	}{
		{o.ClusterName != "", optClusterName, o.ClusterName},
		{o.APIPort != 0, optAPIPort, strconv.Itoa(o.APIPort)},
		{o.DiskThresholdPercent != 0, optDiskThreshold, strconv.Itoa(o.DiskThresholdPercent)},
		{o.DNSResolver != "" && o.DNSResolver != ResolverAuto, optDNSResolver, o.DNSResolver},
	} {
		if s.set {
			out = append(out, cluster.Setting{Option: s.name, Value: s.val, Purpose: purpose, Provider: Name})
		}
	}
	return out
}

// resolve refuses the settings of a cluster occ does not create, checks the provider's own,
// locates the engine the cluster will run in, and chooses the node's DNS resolver by the kind of
// host that engine said it is (decided before anything exists, shown by the dry run, recorded).
func resolve(o cluster.Options, foreign []cluster.Setting) (cluster.Plan, error) {
	if len(foreign) > 0 {
		s := foreign[0]
		return cluster.Plan{}, &option.Error{Option: s.Option, Value: s.Value, Rule: s.Purpose + ", but --cluster-provider " + Name + " creates its own (its kubeconfig is written into the state directory)",
			Fix: "drop " + s.Option + ", or use --cluster-provider " + s.Provider + " to install into that cluster"}
	}
	name, err := ResolveName(o.ClusterName)
	if err != nil {
		return cluster.Plan{}, err
	}
	if o.APIPort < 0 || o.APIPort > 65535 {
		return cluster.Plan{}, &option.Error{Option: optAPIPort, Value: strconv.Itoa(o.APIPort), Rule: "must be between 1 and 65535",
			Fix: "choose a free port on 127.0.0.1, or leave it unset for a free one occ chooses"}
	}
	if o.DiskThresholdPercent < 0 || o.DiskThresholdPercent > 20 {
		return cluster.Plan{}, &option.Error{Option: optDiskThreshold, Value: strconv.Itoa(o.DiskThresholdPercent), Rule: "must be between 1 and 20",
			Fix: "leave it unset for 5"}
	}
	s := Settings{APIPort: o.APIPort, PodSecurityExemptRuntimeClasses: o.ExemptRuntimeClasses, DiskThresholdPercent: o.DiskThresholdPercent, Timeout: o.Timeout}
	if s.DiskThresholdPercent == 0 {
		s.DiskThresholdPercent = DefaultDiskThresholdPercent
	}
	if o.Engine == nil {
		return cluster.Plan{}, errors.New("k3d provider: no engine locator")
	}
	eng, err := o.Engine()
	if err != nil {
		return cluster.Plan{}, err
	}
	if s.DNS, err = ChooseNodeDNS(optDNSResolver, o.DNSResolver, ThisHost(eng.Kind, eng.Platform)); err != nil {
		return cluster.Plan{}, err
	}
	return cluster.Plan{Name: name, APIPort: o.APIPort, Settings: s}, nil
}

// Shown is what the plan document shows of a k3d plan's settings under the names it has always
// had: the kubelet's disk threshold and the node's DNS resolver. Settings of another provider
// show neither (0 and nil).
func Shown(settings any) (diskThresholdPercent int, dns *NodeDNS) {
	s, ok := settings.(Settings)
	if !ok {
		return 0, nil
	}
	d := s.DNS
	return s.DiskThresholdPercent, &d
}
