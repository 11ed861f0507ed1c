package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// kubeProbe is the controller's latest view of the Kubernetes API server.
type kubeProbe struct {
	Reachable  bool   `json:"reachable"`
	Server     string `json:"server,omitempty"`
	GitVersion string `json:"gitVersion,omitempty"`
	Error      string `json:"error,omitempty"`
	CheckedAt  string `json:"checkedAt"`
}

// kubeAuthentication is the part of the Installation the stand-in reads: the compute driver's
// authentication, which the Compose profile writes as {mode: kubeconfig, kubeconfigPath,
// context}.
type kubeAuthentication struct {
	Mode           string `json:"mode"`
	KubeconfigPath string `json:"kubeconfigPath"`
	Context        string `json:"context"`
}

func readKubeAuthentication(configPath string) (kubeAuthentication, error) {
	if configPath == "" {
		return kubeAuthentication{}, errors.New("OCC_CONFIG_PATH is not set")
	}
	b, err := os.ReadFile(configPath)
	if err != nil {
		return kubeAuthentication{}, fmt.Errorf("read Installation configuration: %w", err)
	}
	var doc struct {
		Drivers struct {
			Compute struct {
				Configuration struct {
					Authentication kubeAuthentication `json:"authentication"`
				} `json:"configuration"`
			} `json:"compute"`
		} `json:"drivers"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return kubeAuthentication{}, fmt.Errorf("parse Installation configuration: %w", err)
	}
	a := doc.Drivers.Compute.Configuration.Authentication
	if a.Mode != "kubeconfig" || a.KubeconfigPath == "" {
		return kubeAuthentication{}, fmt.Errorf("the Installation's compute authentication is %q, not kubeconfig with a kubeconfigPath", a.Mode)
	}
	return a, nil
}

// restConfig loads the kubeconfig and context the Installation names.
func restConfig(configPath string) (*rest.Config, error) {
	a, err := readKubeAuthentication(configPath)
	if err != nil {
		return nil, err
	}
	loader := &clientcmd.ClientConfigLoadingRules{ExplicitPath: a.KubeconfigPath}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader, &clientcmd.ConfigOverrides{CurrentContext: a.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", a.KubeconfigPath, err)
	}
	cfg.Timeout = 5 * time.Second
	return cfg, nil
}

// probeKubernetes asks the API server for its version with the Installation's credentials.
func probeKubernetes(ctx context.Context, configPath string) kubeProbe {
	p := kubeProbe{CheckedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	cfg, err := restConfig(configPath)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	p.Server = cfg.Host
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		p.Error = err.Error()
		return p
	}
	_ = ctx
	p.Reachable, p.GitVersion = true, v.GitVersion
	return p
}
