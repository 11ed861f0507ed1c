package dockerbed

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// cacheDir is the bed's cache root, shared with scripts/testdocker.
func cacheDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "occ", "testdocker")
}

// repoRoot is the module root, found from the test's working directory (its package).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/openclaw/occ\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the occ module root above the working directory")
		}
		dir = parent
	}
}

// runScript runs one of the repository's cache scripts and returns the directory it prints.
func runScript(name string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", name))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/%s: %w: %s", name, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// Binaries are the real programs that go into the node image, plus the stand-in.
type Binaries struct {
	// Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler come from scripts/testenv.
	Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler string
	// Containerd and Ctr come from scripts/testcontainerd.
	Containerd, Ctr string
	// Standin is the k3s stand-in multi-call binary (internal/testbed/k3sstandin).
	Standin string
}

var (
	binariesOnce sync.Once
	binaries     Binaries
	binariesErr  error
)

// LocateBinaries finds (building on first use, then from cache) every binary of the node image.
// KUBEBUILDER_ASSETS is used for the control plane when it holds all four programs.
func LocateBinaries() (Binaries, error) {
	binariesOnce.Do(func() { binaries, binariesErr = locateBinaries() })
	return binaries, binariesErr
}

func locateBinaries() (Binaries, error) {
	kube := os.Getenv("KUBEBUILDER_ASSETS")
	need := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	for _, n := range need {
		if kube == "" {
			break
		}
		if _, err := os.Stat(filepath.Join(kube, n)); err != nil {
			kube = ""
		}
	}
	if kube == "" {
		var err error
		if kube, err = runScript("testenv"); err != nil {
			return Binaries{}, err
		}
	}
	ctrd, err := runScript("testcontainerd")
	if err != nil {
		return Binaries{}, err
	}
	standin, err := buildStandin()
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{
		Etcd: filepath.Join(kube, "etcd"), KubeAPIServer: filepath.Join(kube, "kube-apiserver"),
		KubeControllerManager: filepath.Join(kube, "kube-controller-manager"), KubeScheduler: filepath.Join(kube, "kube-scheduler"),
		Containerd: filepath.Join(ctrd, "containerd"), Ctr: filepath.Join(ctrd, "ctr"),
		Standin: standin,
	}
	for _, p := range []string{b.Etcd, b.KubeAPIServer, b.KubeControllerManager, b.KubeScheduler, b.Containerd, b.Ctr} {
		if _, err := os.Stat(p); err != nil {
			return Binaries{}, fmt.Errorf("node image binary: %w", err)
		}
	}
	return b, nil
}

// buildStandin compiles the stand-in into the cache, keyed by a hash of its source, the module
// files and the Go version, so an unchanged stand-in is not even relinked. Concurrent test
// binaries each build to a file of their own and rename it into place, so none sees a
// half-written binary.
func buildStandin() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	io.WriteString(h, runtime.Version())
	srcs, _ := filepath.Glob(filepath.Join(root, "internal/testbed/k3sstandin/*.go"))
	for _, p := range append(srcs, filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")) {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.Base(p), len(b))
		h.Write(b)
	}
	dir := filepath.Join(cacheDir(), "standin")
	out := filepath.Join(dir, "k3sstandin-"+hex.EncodeToString(h.Sum(nil))[:16])
	if touch(out) {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".build-%d", os.Getpid()))
	defer os.Remove(tmp)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, "./internal/testbed/k3sstandin")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the k3s stand-in: %w: %s", err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	return out, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
