package existing

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/option"
)

// writeKubeconfig writes a kubeconfig with one context "dev" on server, current or not.
func writeKubeconfig(t *testing.T, server string, current bool) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["dev-cluster"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["dev-user"] = &clientcmdapi.AuthInfo{Token: "not-a-real-token"}
	cfg.Contexts["dev"] = &clientcmdapi.Context{Cluster: "dev-cluster", AuthInfo: "dev-user"}
	if current {
		cfg.CurrentContext = "dev"
	}
	path := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// A developer's kubeconfig decides the cluster: the recorded access is one absolute path, a
// concrete context and the cluster entry's name and server, whatever the shell's directory.
func TestEnsureResolvesTheRecordedAccess(t *testing.T) {
	path := writeKubeconfig(t, "https://10.0.0.7:6443", true)
	t.Chdir(filepath.Dir(path))
	a, err := Provider{}.Ensure(context.Background(), cluster.Request{Kubeconfig: "config"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Provider != Name || a.Kubeconfig != path || a.Context != "dev" || a.Name != "dev-cluster" || a.Server != "https://10.0.0.7:6443" {
		t.Fatalf("access %+v", a)
	}
}

// Settings that cannot name one cluster are refused by the local check the dry run reports:
// no current context, an unknown context, a missing file, and a $KUBECONFIG of several files
// (which one recorded path could not reproduce) as a bad setting.
func TestCheckRefusesWhatCannotBeRecorded(t *testing.T) {
	noCurrent := writeKubeconfig(t, "https://10.0.0.7:6443", false)
	cases := []struct {
		name string
		req  cluster.Request
		env  string
		want string
	}{
		{name: "no current context", req: cluster.Request{Kubeconfig: noCurrent}, want: "has no current context: pass --context NAME"},
		{name: "unknown context", req: cluster.Request{Kubeconfig: noCurrent, Context: "prod"}, want: `has no context "prod"`},
		{name: "missing file", req: cluster.Request{Kubeconfig: filepath.Join(t.TempDir(), "absent")}, want: "no such file or directory"},
		{name: "several files in KUBECONFIG", env: noCurrent + string(os.PathListSeparator) + noCurrent, want: "lists several files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			err := Provider{}.Check(tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check: %v; want %q", err, tc.want)
			}
			var opt *option.Error
			if tc.env != "" && !errors.As(err, &opt) {
				t.Errorf("%T is not a setting error", err)
			}
		})
	}
}

// The cluster is stopped: the preflight says so, naming the context and server, instead of
// letting `up` start downloading.
func TestPreflightNamesAStoppedCluster(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := "https://" + l.Addr().String()
	l.Close()
	path := writeKubeconfig(t, server, true)
	err = Provider{}.Preflight(context.Background(), cluster.Request{Kubeconfig: path})
	if err == nil || !strings.Contains(err.Error(), `the cluster of context "dev" (`+server+`) is not reachable`) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Preflight: %v", err)
	}
}

// A control plane that needs a network joined or a NodePort published asks it of a cluster occ
// did not create: the local check refuses both, naming each, and `up` changes nothing there.
func TestCheckRefusesNeedsOfACreatedCluster(t *testing.T) {
	path := writeKubeconfig(t, "https://10.0.0.7:6443", true)
	err := Provider{}.Check(cluster.Request{Kubeconfig: path, Needs: cluster.Needs{Network: "oce_development", Publish: []cluster.Port{{HostPort: 3100, NodePort: 30080}}}})
	if err == nil || !strings.Contains(err.Error(), "cannot join container network oce_development") || !strings.Contains(err.Error(), "cannot publish NodePort 30080 on 127.0.0.1:3100") {
		t.Fatalf("Check: %v", err)
	}
	if err := (Provider{}).Check(cluster.Request{Kubeconfig: path}); err != nil {
		t.Fatalf("Check without needs: %v", err)
	}
}
