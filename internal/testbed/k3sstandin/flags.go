package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// serverConfig is what `k3s server` was asked for: the k3s flags k3d and the occ k3d provider
// pass, parsed the way k3s parses them (repeatable flags, comma lists for --disable).
type serverConfig struct {
	dataDir             string
	tlsSANs             []string
	apiserverArgs       []string
	controllerArgs      []string
	schedulerArgs       []string
	kubeletArgs         []string
	disable             map[string]bool
	nodeName            string
	nodeIP              string
	nodeLabels          []string
	nodeTaints          []string
	snapshotter         string
	writeKubeconfig     string
	writeKubeconfigMode string
	clusterCIDR         string
	serviceCIDR         string
	clusterDomain       string
	clusterInit         bool
	// raw is the argument list as given, recorded on the Node as k3s does (k3s.io/node-args).
	raw []string
}

// valueFlags are the k3s server flags that take a value. The stand-in honours the ones its fields
// name; the rest are accepted because k3d or common setups pass them and they change nothing a
// played kubelet could show (network plumbing, agent tokens).
var valueFlags = map[string]bool{
	"tls-san": true, "kube-apiserver-arg": true, "kube-controller-manager-arg": true,
	"kube-scheduler-arg": true, "kubelet-arg": true, "kube-proxy-arg": true,
	"kube-cloud-controller-manager-arg": true, "disable": true, "node-label": true,
	"node-taint": true, "node-name": true, "node-ip": true, "node-external-ip": true,
	"token": true, "agent-token": true, "data-dir": true, "snapshotter": true,
	"write-kubeconfig": true, "write-kubeconfig-mode": true, "cluster-cidr": true,
	"service-cidr": true, "cluster-dns": true, "cluster-domain": true, "flannel-backend": true,
	"egress-selector-mode": true, "default-local-storage-path": true, "etcd-arg": true,
}

var boolFlags = map[string]bool{
	"cluster-init": true, "disable-network-policy": true, "disable-helm-controller": true,
	"disable-cloud-controller": true, "disable-kube-proxy": true, "secrets-encryption": true,
	"debug": true, "protect-kernel-defaults": true, "selinux": true, "embedded-registry": true,
}

var shortFlags = map[string]string{"d": "data-dir", "o": "write-kubeconfig"}

func parseServerFlags(args []string) (*serverConfig, error) {
	c := &serverConfig{
		dataDir:       "/var/lib/rancher/k3s",
		disable:       map[string]bool{},
		clusterCIDR:   "10.42.0.0/16",
		serviceCIDR:   "10.43.0.0/16",
		clusterDomain: "cluster.local",
		snapshotter:   "native",
		raw:           append([]string(nil), args...),
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("unexpected argument %q (k3s server takes flags only)", a)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if long, ok := shortFlags[name]; ok {
			name = long
		}
		switch {
		case boolFlags[name]:
			if hasValue && value != "true" && value != "false" {
				return nil, fmt.Errorf("flag --%s: value %q is not true or false", name, value)
			}
			if name == "cluster-init" {
				c.clusterInit = !hasValue || value == "true"
			}
			continue
		case valueFlags[name]:
			if !hasValue {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("flag --%s needs a value", name)
				}
				i++
				value = args[i]
			}
		default:
			return nil, fmt.Errorf("flag %s is not supported by the k3s stand-in (supported: %s); extend internal/testbed/k3sstandin if the provider needs it", a, supportedFlags())
		}
		switch name {
		case "tls-san":
			c.tlsSANs = append(c.tlsSANs, splitList(value)...)
		case "kube-apiserver-arg":
			c.apiserverArgs = append(c.apiserverArgs, value)
		case "kube-controller-manager-arg":
			c.controllerArgs = append(c.controllerArgs, value)
		case "kube-scheduler-arg":
			c.schedulerArgs = append(c.schedulerArgs, value)
		case "kubelet-arg":
			c.kubeletArgs = append(c.kubeletArgs, value)
		case "disable":
			for _, d := range splitList(value) {
				c.disable[d] = true
			}
		case "node-label":
			c.nodeLabels = append(c.nodeLabels, value)
		case "node-taint":
			c.nodeTaints = append(c.nodeTaints, value)
		case "node-name":
			c.nodeName = value
		case "node-ip":
			c.nodeIP = value
		case "data-dir":
			c.dataDir = value
		case "snapshotter":
			if value != "native" {
				return nil, fmt.Errorf("flag --snapshotter=%s: the stand-in's containerd runs inside a container on overlay storage and uses the native snapshotter only", value)
			}
		case "write-kubeconfig":
			c.writeKubeconfig = value
		case "write-kubeconfig-mode":
			c.writeKubeconfigMode = value
		case "cluster-cidr":
			c.clusterCIDR = value
		case "service-cidr":
			c.serviceCIDR = value
		case "cluster-domain":
			c.clusterDomain = value
		}
	}
	if c.nodeName == "" {
		c.nodeName = os.Getenv("K3S_NODE_NAME")
	}
	if c.nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("node name: %w", err)
		}
		c.nodeName = h
	}
	if c.writeKubeconfig == "" {
		c.writeKubeconfig = os.Getenv("K3S_KUBECONFIG_OUTPUT")
	}
	if c.writeKubeconfigMode == "" {
		c.writeKubeconfigMode = os.Getenv("K3S_KUBECONFIG_MODE")
	}
	if url := os.Getenv("K3S_URL"); url != "" {
		return nil, fmt.Errorf("K3S_URL=%s: joining another server is not supported by the stand-in (use 1 server, 0 agents)", url)
	}
	return c, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func supportedFlags() string {
	var names []string
	for n := range valueFlags {
		names = append(names, "--"+n)
	}
	for n := range boolFlags {
		names = append(names, "--"+n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// componentArgs merges k3s-style pass-through arguments ("key=value", without dashes) over a
// component's defaults: a passed key replaces the default of the same key, as in k3s.
func componentArgs(defaults map[string]string, passed []string) []string {
	merged := map[string]string{}
	for k, v := range defaults {
		merged[k] = v
	}
	for _, p := range passed {
		k, v, _ := strings.Cut(strings.TrimLeft(p, "-"), "=")
		merged[k] = v
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, "--"+k+"="+merged[k])
	}
	return out
}

// kubeletArg returns the value of a --kubelet-arg key, or "".
func (c *serverConfig) kubeletArg(key string) string {
	v := ""
	for _, p := range c.kubeletArgs {
		if k, val, _ := strings.Cut(strings.TrimLeft(p, "-"), "="); k == key {
			v = val
		}
	}
	return v
}
