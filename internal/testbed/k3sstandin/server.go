package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fixed locations inside the node, the ones k3s uses where k3d or a user would look.
const (
	adminKubeconfig  = "/etc/rancher/k3s/k3s.yaml"
	containerdSocket = "/run/k3s/containerd/containerd.sock"
	apiPort          = 6443
	componentLogDir  = "/var/log/k3s-standin"
	startupTimeout   = 3 * time.Minute
)

func server(args []string) error {
	cfg, err := parseServerFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logf("info", "Starting k3s %s (occ test-bed stand-in: real containerd, etcd, kube-apiserver, kube-controller-manager, kube-scheduler; played kubelet)", version)

	nodeIP, err := nodeAddress(cfg.nodeIP)
	if err != nil {
		return err
	}
	sup, err := newSupervisor(componentLogDir)
	if err != nil {
		return err
	}
	defer sup.stop()

	containerd, err := startContainerd(sup, cfg)
	if err != nil {
		return err
	}
	etcd, err := sup.start("etcd", "/bin/etcd",
		"--data-dir="+filepath.Join(cfg.dataDir, "server/db/etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--listen-metrics-urls=",
		// The node's data lives in a throwaway Docker volume; durability is not worth the latency.
		"--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return err
	}
	if err := waitFor(ctx, containerd, "containerd", startupTimeout, dialUnix(containerdSocket)); err != nil {
		return err
	}
	logf("info", "Containerd is now running")
	if err := waitFor(ctx, etcd, "etcd", startupTimeout, httpOK(http.DefaultClient, "http://127.0.0.1:2379/health")); err != nil {
		return err
	}

	tlsDir := filepath.Join(cfg.dataDir, "server/tls")
	certs, err := loadOrCreateCA(tlsDir, "server-ca")
	if err != nil {
		return err
	}
	frontCA, err := loadOrCreateCA(tlsDir, "request-header-ca")
	if err != nil {
		return err
	}
	proxyClient, err := frontCA.client("client-auth-proxy", "system:auth-proxy")
	if err != nil {
		return err
	}
	dnsNames, ips, err := servingNames(cfg, nodeIP)
	if err != nil {
		return err
	}
	serving, err := certs.serving("serving-kube-apiserver", dnsNames, ips)
	if err != nil {
		return err
	}
	saKey, err := certs.serviceAccountKey()
	if err != nil {
		return err
	}
	admin, err := certs.client("client-admin", "system:admin", "system:masters")
	if err != nil {
		return err
	}
	controllerCert, err := certs.client("client-controller", "system:kube-controller-manager")
	if err != nil {
		return err
	}
	schedulerCert, err := certs.client("client-scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	// The apiserver reaches the played kubelet's log endpoint as k3s configures it: with a
	// client certificate of the server CA, verifying the kubelet's serving certificate, at the
	// node's InternalIP first.
	kubeletClient, err := certs.client("client-kube-apiserver", "system:kube-apiserver")
	if err != nil {
		return err
	}
	kubeletDNS, kubeletIPs := kubeletNames(cfg, nodeIP)
	kubeletServing, err := certs.serving("serving-kubelet", kubeletDNS, kubeletIPs)
	if err != nil {
		return err
	}

	issuer := "https://kubernetes.default.svc." + cfg.clusterDomain
	apiArgs := componentArgs(map[string]string{
		"etcd-servers":                     "http://127.0.0.1:2379",
		"bind-address":                     "0.0.0.0",
		"secure-port":                      strconv.Itoa(apiPort),
		"advertise-address":                nodeIP.String(),
		"tls-cert-file":                    serving.Cert,
		"tls-private-key-file":             serving.Key,
		"client-ca-file":                   certs.CAFile,
		"service-account-issuer":           issuer,
		"api-audiences":                    issuer + ",k3s",
		"service-account-key-file":         saKey,
		"service-account-signing-key-file": saKey,
		"service-cluster-ip-range":         cfg.serviceCIDR,
		"authorization-mode":               "Node,RBAC",
		"enable-admission-plugins":         "NodeRestriction",
		"allow-privileged":                 "true",
		"anonymous-auth":                   "false",
		"profiling":                        "false",
		"cert-dir":                         filepath.Join(tlsDir, "temporary-certs"),
		// The front-proxy settings complete extension-apiserver-authentication, which the
		// controller-manager and scheduler read at start.
		"requestheader-client-ca-file":       frontCA.CAFile,
		"requestheader-allowed-names":        "system:auth-proxy",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-username-headers":     "X-Remote-User",
		"proxy-client-cert-file":             proxyClient.Cert,
		"proxy-client-key-file":              proxyClient.Key,
		"kubelet-client-certificate":         kubeletClient.Cert,
		"kubelet-client-key":                 kubeletClient.Key,
		"kubelet-certificate-authority":      certs.CAFile,
		"kubelet-preferred-address-types":    "InternalIP,ExternalIP,Hostname",
	}, cfg.apiserverArgs)
	apiserver, err := sup.start("kube-apiserver", "/bin/kube-apiserver", apiArgs...)
	if err != nil {
		return err
	}
	logf("info", "Running kube-apiserver %s", strings.Join(apiArgs, " "))

	adminTLS, err := clientTLS(certs.CAFile, admin)
	if err != nil {
		return err
	}
	local := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	if err := waitFor(ctx, apiserver, "kube-apiserver", startupTimeout, httpOK(&http.Client{Transport: &http.Transport{TLSClientConfig: adminTLS}}, local+"/readyz")); err != nil {
		return err
	}
	logf("info", "Kube API server is now running")

	if err := writeKubeconfigs(cfg, certs, local, admin, controllerCert, schedulerCert); err != nil {
		return err
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}

	controller, err := sup.start("kube-controller-manager", "/bin/kube-controller-manager", componentArgs(map[string]string{
		"kubeconfig":                       kubeconfigPath(cfg, "controller"),
		"authentication-kubeconfig":        kubeconfigPath(cfg, "controller"),
		"authorization-kubeconfig":         kubeconfigPath(cfg, "controller"),
		"service-account-private-key-file": saKey,
		"root-ca-file":                     certs.CAFile,
		"cluster-signing-cert-file":        certs.CAFile,
		"cluster-signing-key-file":         certs.KeyFile,
		"use-service-account-credentials":  "true",
		"allocate-node-cidrs":              "true",
		"cluster-cidr":                     cfg.clusterCIDR,
		"service-cluster-ip-range":         cfg.serviceCIDR,
		"configure-cloud-routes":           "false",
		"leader-elect":                     "false",
		"bind-address":                     "127.0.0.1",
		"secure-port":                      "10257",
		"profiling":                        "false",
	}, cfg.controllerArgs)...)
	if err != nil {
		return err
	}
	scheduler, err := sup.start("kube-scheduler", "/bin/kube-scheduler", componentArgs(map[string]string{
		"kubeconfig":                kubeconfigPath(cfg, "scheduler"),
		"authentication-kubeconfig": kubeconfigPath(cfg, "scheduler"),
		"authorization-kubeconfig":  kubeconfigPath(cfg, "scheduler"),
		"leader-elect":              "false",
		"bind-address":              "127.0.0.1",
		"secure-port":               "10259",
		"profiling":                 "false",
	}, cfg.schedulerArgs)...)
	if err != nil {
		return err
	}

	kl := newKubelet(client, cfg, nodeIP, kubeletServing, certs.CAFile)
	if err := kl.register(ctx); err != nil {
		return err
	}
	// Both serve health on a self-signed certificate of their own; the check only asks whether
	// the process is up, so the certificate is not verified.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitFor(ctx, controller, "kube-controller-manager", startupTimeout, httpOK(insecure, "https://127.0.0.1:10257/healthz")); err != nil {
		return err
	}
	if err := waitFor(ctx, scheduler, "kube-scheduler", startupTimeout, httpOK(insecure, "https://127.0.0.1:10259/healthz")); err != nil {
		return err
	}

	addonErr := make(chan error, 1)
	addons, err := newAddons(restCfg, client, cfg)
	if err != nil {
		return err
	}
	if err := addons.start(ctx); err != nil {
		return err
	}
	if !cfg.disable["coredns"] {
		logf("info", "Cluster dns configmap has been set successfully")
	}
	kubeletErr := make(chan error, 1)
	go func() { kubeletErr <- kl.run(ctx) }()
	go func() { addonErr <- addons.run(ctx) }()
	logf("info", "k3s is up and running")

	select {
	case <-ctx.Done():
		logf("info", "Shutting down k3s (signal received)")
		return nil
	case err := <-sup.failed:
		return err
	case err := <-kubeletErr:
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("played kubelet: %w", err)
	case err := <-addonErr:
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("addons: %w", err)
	}
}

func startContainerd(sup *supervisor, cfg *serverConfig) (*proc, error) {
	root := filepath.Join(cfg.dataDir, "agent/containerd")
	config := filepath.Join(cfg.dataDir, "agent/etc/containerd/config.toml")
	// No CRI: nothing runs containers in the stand-in. The transfer service unpacks imported
	// images with the native snapshotter, which works inside a container on overlay storage.
	toml := fmt.Sprintf(`version = 3
root = %q
state = "/run/k3s/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.sandbox.controller.v1.shim"]

[grpc]
  address = %q

[plugins."io.containerd.transfer.v1.local"]
  [[plugins."io.containerd.transfer.v1.local".unpack_config]]
    platform = "linux/%s"
    snapshotter = "native"
`, root, containerdSocket, goarch())
	if err := writeFileAtomic(config, []byte(toml), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(containerdSocket), 0o755); err != nil {
		return nil, err
	}
	return sup.start("containerd", "/bin/containerd", "--config", config)
}

// nodeAddress is the node's InternalIP: the --node-ip flag, else the IPv4 address of the
// interface that holds the default route (the container's address on its Docker network), the
// way k3s picks it.
func nodeAddress(flag string) (net.IP, error) {
	if flag != "" {
		ip := net.ParseIP(flag)
		if ip == nil {
			return nil, fmt.Errorf("flag --node-ip=%s is not an IP address", flag)
		}
		return ip, nil
	}
	iface := defaultRouteInterface()
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var fallback net.IP
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback != 0 || i.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.To4() == nil {
				continue
			}
			if i.Name == iface {
				return ipn.IP.To4(), nil
			}
			if fallback == nil {
				fallback = ipn.IP.To4()
			}
		}
	}
	if fallback == nil {
		return nil, errors.New("node address: no IPv4 address on any interface (is the node on a Docker network?)")
	}
	return fallback, nil
}

func defaultRouteInterface() string {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 2 && f[1] == "00000000" {
			return f[0]
		}
	}
	return ""
}

// servingNames are the apiserver certificate's names: the in-cluster service names and first
// service IP, loopback, the node's name and addresses, and every --tls-san.
func servingNames(cfg *serverConfig, nodeIP net.IP) ([]string, []net.IP, error) {
	dns := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + cfg.clusterDomain, "localhost", cfg.nodeName}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), nodeIP}
	_, svc, err := net.ParseCIDR(cfg.serviceCIDR)
	if err != nil {
		return nil, nil, fmt.Errorf("service CIDR %q: %w", cfg.serviceCIDR, err)
	}
	first := slices.Clone(svc.IP.To4())
	first[3]++
	ips = append(ips, first)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				ips = append(ips, ipn.IP)
			}
		}
	}
	for _, san := range cfg.tlsSANs {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, san)
		}
	}
	slices.Sort(dns)
	dns = slices.Compact(dns)
	seen := map[string]bool{}
	var uniq []net.IP
	for _, ip := range ips {
		if ip.IsUnspecified() || seen[ip.String()] {
			continue
		}
		seen[ip.String()] = true
		uniq = append(uniq, ip)
	}
	slices.SortFunc(uniq, func(a, b net.IP) int { return strings.Compare(a.String(), b.String()) })
	return dns, uniq, nil
}

func kubeconfigPath(cfg *serverConfig, who string) string {
	return filepath.Join(cfg.dataDir, "server/cred", who+".kubeconfig")
}

// writeKubeconfigs writes the admin kubeconfig (k3s.yaml, and K3S_KUBECONFIG_OUTPUT, which k3d
// reads; cluster, user and context all named "default", as k3d requires) and one per component.
func writeKubeconfigs(cfg *serverConfig, certs *pki, server string, admin, controller, scheduler certFiles) error {
	ca, err := certs.caPEM()
	if err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if cfg.writeKubeconfigMode != "" {
		m, err := strconv.ParseUint(cfg.writeKubeconfigMode, 8, 32)
		if err != nil {
			return fmt.Errorf("write-kubeconfig-mode %q is not an octal file mode: %w", cfg.writeKubeconfigMode, err)
		}
		mode = os.FileMode(m)
	}
	cert, err := os.ReadFile(admin.Cert)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(admin.Key)
	if err != nil {
		return err
	}
	adminCfg := kubeconfig(server, func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		c.CertificateAuthorityData = ca
		u.ClientCertificateData, u.ClientKeyData = cert, key
	})
	targets := []string{adminKubeconfig}
	if cfg.writeKubeconfig != "" {
		targets = append(targets, cfg.writeKubeconfig)
	}
	for _, t := range targets {
		b, err := clientcmd.Write(*adminCfg)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(t, b, mode); err != nil {
			return fmt.Errorf("write kubeconfig %s: %w", t, err)
		}
	}
	for who, files := range map[string]certFiles{"controller": controller, "scheduler": scheduler} {
		c := kubeconfig(server, func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			c.CertificateAuthority = certs.CAFile
			u.ClientCertificate, u.ClientKey = files.Cert, files.Key
		})
		if err := clientcmd.WriteToFile(*c, kubeconfigPath(cfg, who)); err != nil {
			return fmt.Errorf("write %s kubeconfig: %w", who, err)
		}
	}
	return nil
}

func kubeconfig(server string, fill func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) *clientcmdapi.Config {
	c := clientcmdapi.NewConfig()
	cluster, user := clientcmdapi.NewCluster(), clientcmdapi.NewAuthInfo()
	cluster.Server = server
	fill(cluster, user)
	c.Clusters["default"], c.AuthInfos["default"] = cluster, user
	ctx := clientcmdapi.NewContext()
	ctx.Cluster, ctx.AuthInfo = "default", "default"
	c.Contexts["default"], c.CurrentContext = ctx, "default"
	return c
}

func clientTLS(caFile string, client certFiles) (*tls.Config, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	pair, err := tls.LoadX509KeyPair(client.Cert, client.Key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}, nil
}

func dialUnix(path string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

func httpOK(c *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}
