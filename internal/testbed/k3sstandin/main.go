// Command k3sstandin is the multi-call binary of the k3s stand-in node image that the Docker +
// k3d test bed builds (internal/testbed/dockerbed). It is test-bed code: product code never
// imports or runs it. It answers to the names k3d executes in its containers:
//
//	k3s server …              start containerd, etcd, kube-apiserver, kube-controller-manager and
//	                          kube-scheduler (all real binaries), print the log lines k3d waits
//	                          for, write the kubeconfig k3d reads, and play the kubelet
//	kubectl uncordon|drain    what k3d's entrypoint script runs against its own node
//	iptables-save|-restore    what k3d's DNS fix pipes through (no-ops: the node has no netfilter
//	                          rules of its own to rewrite)
//	k3d-tools noop|save-image the k3d tools container
//	k3d-proxy                 the k3d server load balancer (a TCP forwarder configured from the
//	                          file k3d writes)
//
// The README next to this file says what is real and what is played.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// version is what the stand-in reports as its Kubernetes version; it is the version of the real
// control-plane binaries scripts/testenv builds.
const version = "v1.37.2+k3s-standin"

func main() {
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	// Invoked as itself (k3sstandin CMD …) the first argument names the personality.
	if name == "k3sstandin" && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	var err error
	switch name {
	case "k3s":
		err = k3s(args)
	case "kubectl":
		err = kubectl(args)
	case "iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore":
		err = iptables(name, args)
	case "k3d-tools":
		err = tools(args)
	case "k3d-proxy", "nginx-proxy":
		err = proxy(args)
	default:
		err = fmt.Errorf("unknown personality %q (k3s, kubectl, iptables-save, iptables-restore, k3d-tools, k3d-proxy)", name)
	}
	if err != nil {
		logf("error", "%s: %v", name, err)
		os.Exit(1)
	}
}

func k3s(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: k3s server [flags] | k3s kubectl … | k3s --version")
	}
	switch args[0] {
	case "server":
		return server(args[1:])
	case "kubectl":
		return kubectl(args[1:])
	case "--version", "-v", "version":
		fmt.Printf("k3s version %s\n", version)
		return nil
	case "agent":
		return fmt.Errorf("k3s agent: the stand-in runs servers only (a cluster of 1 server and 0 agents)")
	}
	return fmt.Errorf("k3s %s: not supported by the stand-in (supported: server, kubectl, --version)", args[0])
}

// iptables stands in for the netfilter tools. k3d's DNS fix runs
// `iptables-save | sed … | iptables-restore` to point Docker's embedded-DNS rules at the gateway;
// in the stand-in nothing resolves names through cluster DNS (there are no Pods, no CoreDNS), so
// there is nothing to rewrite: save prints an empty table set, restore consumes its input.
func iptables(name string, _ []string) error {
	switch name {
	case "iptables-save", "ip6tables-save":
		return nil
	case "iptables-restore", "ip6tables-restore":
		_, err := io.Copy(io.Discard, os.Stdin)
		return err
	}
	return nil
}

// logf writes one line in the format k3s logs in (logrus text), which is what k3d scans.
func logf(level, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "time=%q level=%s msg=%q\n", time.Now().UTC().Format(time.RFC3339), level, fmt.Sprintf(format, a...))
}
