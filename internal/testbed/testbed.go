// Package testbed starts a real kube-apiserver and etcd (controller-runtime's envtest) for
// integration tests. The binaries come from scripts/testenv, which builds them once from the Go
// module proxy and caches them by version; KUBEBUILDER_ASSETS overrides the location.
//
// One control plane serves a whole test binary: a package's TestMain calls Run, and tests call
// Config or Client. Tests isolate themselves by working in namespaces of their own.
package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	once    sync.Once
	env     *envtest.Environment
	cfg     *rest.Config
	initErr error
)

// Run runs the package's tests and stops the control plane afterwards, if one was started.
// Use it as: func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }.
func Run(m *testing.M) int {
	code := m.Run()
	stopControllerManager()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testbed: stop control plane: %v\n", err)
		}
	}
	return code
}

// Config returns a rest.Config for the shared control plane, starting it on first use. A test
// bed that cannot start fails the test: integration tests are never skipped silently.
func Config(t testing.TB) *rest.Config {
	t.Helper()
	once.Do(start)
	if initErr != nil {
		t.Fatalf("testbed: %v", initErr)
	}
	return rest.CopyConfig(cfg)
}

// Client returns a typed client for the shared control plane.
func Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(Config(t))
	if err != nil {
		t.Fatalf("testbed: client: %v", err)
	}
	return c
}

// Kubeconfig writes a kubeconfig file for the shared control plane into a test temp dir and
// returns its path, for code under test that loads kubeconfig files the way a user would.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	Config(t)
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "occ-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("testbed: add user: %v", err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("testbed: kubeconfig: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("testbed: write kubeconfig: %v", err)
	}
	return path
}

func start() {
	assets, err := assetsDir()
	if err != nil {
		initErr = err
		return
	}
	e := &envtest.Environment{BinaryAssetsDirectory: assets}
	c, err := e.Start()
	if err != nil {
		initErr = fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
		return
	}
	// The default client-side rate limits slow concurrent tests down for no benefit here.
	c.QPS, c.Burst = 500, 1000
	env, cfg = e, c
}

// assetsDir returns KUBEBUILDER_ASSETS, or asks scripts/testenv (which builds on first use).
func assetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "scripts", "testenv")
	cmd := exec.Command(script)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s failed (%w); set KUBEBUILDER_ASSETS to a folder holding kube-apiserver and etcd, or run it by hand to see why", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory: cannot find scripts/testenv; set KUBEBUILDER_ASSETS")
		}
		dir = parent
	}
}
