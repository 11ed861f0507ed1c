package k3d

import (
	"errors"
	"strconv"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/option"
)

// The provider's settings as the CLI shows them and messages name them (option.Setting.String);
// declare binds each to its field of a ClusterOptions.
var (
	settingClusterName = option.Setting{Flag: "cluster-name", Env: EnvClusterName,
		Usage: "name of the k3d cluster, occ-dev-… (default occ-dev-<random>; env " + EnvClusterName + ")"}
	settingAPIPort = option.Setting{Flag: "api-port", Env: EnvAPIPort,
		Usage: "port of the k3d cluster's Kubernetes API on 127.0.0.1 (default: a free port; env " + EnvAPIPort + ")",
		Want:  "a port between 1 and 65535 (omit it for a free port)"}
	settingDiskThreshold = option.Setting{Flag: "disk-threshold-percent", Env: EnvDiskThresholdPercent,
		Usage: "kubelet disk eviction threshold of the k3d node, 1-20 (default 5; env " + EnvDiskThresholdPercent + ")",
		Want:  "a whole percentage between 1 and 20 (omit it for 5)"}
	settingDNSResolver = option.Setting{Flag: "k3d-dns-resolver", Env: EnvDNSResolver,
		Usage: "DNS server of the k3d node: auto (chosen by the kind of host), an IPv4 address, or k3d for k3d's own handling (default auto; env " + EnvDNSResolver + ")"}
)

// purpose is what each of the provider's settings does, for another provider's refusal.
const purpose = "configures the k3d cluster occ creates"

// Registration is the k3d provider as the flow registers it: its settings (ClusterOptions), the
// plan it decides from them (Settings) and the live ClusterProvider.
func Registration() cluster.Registration {
	return cluster.Registration{
		Name:     Name,
		Settings: declare,
		Given:    given,
		Resolve:  resolve,
		Open:     func() cluster.Provider { return &ClusterProvider{} },
	}
}

// ClusterOptions are the settings of the k3d cluster the user gives (Registration's Settings
// declares them); the zero value of each selects the provider's default.
type ClusterOptions struct {
	// ClusterName names the cluster (--cluster-name, EnvClusterName); empty picks
	// occ-dev-<10 random characters>.
	ClusterName string
	// APIPort is the Kubernetes API's port on 127.0.0.1 (--api-port, EnvAPIPort); 0 lets occ
	// choose a free port when it creates the cluster.
	APIPort int
	// DiskThresholdPercent is the kubelet's disk eviction threshold of the node
	// (--disk-threshold-percent, EnvDiskThresholdPercent), 1..20; 0 selects 5.
	DiskThresholdPercent int
	// DNSResolver is the node's DNS resolver (--k3d-dns-resolver, EnvDNSResolver): auto (the
	// default: occ chooses by the kind of host, ChooseNodeDNS), an IPv4 address the node can
	// reach (for VPNs whose DNS it cannot), or "k3d" for k3d's own DNS handling.
	DNSResolver string
}

// declare binds the provider's own settings to a fresh ClusterOptions. The node image
// (EnvK3sImage) is not among them: the flow applies it to the pins before any provider
// resolves (SelectNodeImage), since every image, the bundle and the Gateway chart's render
// follow the pins.
func declare() (any, []option.Setting) {
	o := &ClusterOptions{}
	bind := func(s option.Setting, field any) option.Setting {
		s.Field = field
		return s
	}
	return o, []option.Setting{
		bind(settingClusterName, &o.ClusterName),
		bind(settingAPIPort, &o.APIPort),
		bind(settingDiskThreshold, &o.DiskThresholdPercent),
		bind(settingDNSResolver, &o.DNSResolver),
	}
}

// own are the provider's own settings o carries.
func own(o cluster.Options) (ClusterOptions, error) {
	return option.Own[ClusterOptions](o.Settings[Name], "the "+Name+" cluster provider")
}

// given lists the provider's settings the user set (those not at their zero value), read through
// the rows declare binds, in their order, so a new setting needs no line here; auto is the
// resolver's default, not a choice. Settings of another type are resolve's error when k3d
// is chosen.
func given(opts cluster.Options) []cluster.Setting {
	o, _ := own(opts)
	if o.DNSResolver == ResolverAuto {
		o.DNSResolver = ""
	}
	value, settings := declare()
	*value.(*ClusterOptions) = o
	var out []cluster.Setting
	for _, s := range settings {
		text := ""
		switch f := s.Field.(type) {
		case *string:
			text = *f
		case *int:
			if *f != 0 {
				text = strconv.Itoa(*f)
			}
		case *bool:
			if *f {
				text = strconv.FormatBool(*f)
			}
		}
		if text != "" {
			out = append(out, cluster.Setting{Option: s.String(), Value: text, Purpose: purpose, Provider: Name})
		}
	}
	return out
}

// resolve refuses the settings of a cluster occ does not create, checks the provider's own,
// locates the engine the cluster will run in, and chooses the node's DNS resolver by the kind of
// host that engine said it is (decided before anything exists, shown by the dry run, recorded).
func resolve(opts cluster.Options, foreign []cluster.Setting) (cluster.Plan, error) {
	if len(foreign) > 0 {
		s := foreign[0]
		return cluster.Plan{}, &option.Error{Option: s.Option, Value: s.Value, Rule: s.Purpose + ", but --cluster-provider " + Name + " creates its own (its kubeconfig is written into the state directory)",
			Fix: "drop " + s.Option + ", or use --cluster-provider " + s.Provider + " to install into that cluster"}
	}
	o, err := own(opts)
	if err != nil {
		return cluster.Plan{}, err
	}
	name, err := ResolveName(o.ClusterName)
	if err != nil {
		return cluster.Plan{}, err
	}
	if o.APIPort < 0 || o.APIPort > 65535 {
		return cluster.Plan{}, &option.Error{Option: settingAPIPort.String(), Value: strconv.Itoa(o.APIPort), Rule: "must be between 1 and 65535",
			Fix: "choose a free port on 127.0.0.1, or leave it unset for a free one occ chooses"}
	}
	if o.DiskThresholdPercent < 0 || o.DiskThresholdPercent > 20 {
		return cluster.Plan{}, &option.Error{Option: settingDiskThreshold.String(), Value: strconv.Itoa(o.DiskThresholdPercent), Rule: "must be between 1 and 20",
			Fix: "leave it unset for 5"}
	}
	s := Settings{APIPort: o.APIPort, PodSecurityExemptRuntimeClasses: opts.ExemptRuntimeClasses, DiskThresholdPercent: o.DiskThresholdPercent, Timeout: opts.Timeout}
	if s.DiskThresholdPercent == 0 {
		s.DiskThresholdPercent = DefaultDiskThresholdPercent
	}
	if opts.Engine == nil {
		return cluster.Plan{}, errors.New("k3d provider: no engine locator")
	}
	eng, err := opts.Engine()
	if err != nil {
		return cluster.Plan{}, err
	}
	if s.DNS, err = ChooseNodeDNS(settingDNSResolver.String(), o.DNSResolver, ThisHost(eng.Kind, eng.Platform)); err != nil {
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
