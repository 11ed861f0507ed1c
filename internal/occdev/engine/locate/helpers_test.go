package locate

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// The version answers of the two engines, in the shape each sends on GET /version: Docker
// 28.5.2's (docker-ce) and Podman 4.3.1's (Debian 12), as measured on these machines.
const (
	dockerVersionJSON = `{"Platform":{"Name":"Docker Engine - Community"},"Components":[{"Name":"Engine","Version":"28.5.2","Details":{"ApiVersion":"1.51","MinAPIVersion":"1.24","Os":"linux"}},{"Name":"containerd","Version":"v1.7.28"},{"Name":"runc","Version":"1.3.0"},{"Name":"docker-init","Version":"0.19.0"}],"Version":"28.5.2","ApiVersion":"1.51","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64"}`
	// Docker Desktop's answer names the product in its platform (`docker version` prints it as
	// "Server: Docker Desktop 4.37.1 (178610)").
	dockerDesktopVersionJSON = `{"Platform":{"Name":"Docker Desktop 4.37.1 (178610)"},"Components":[{"Name":"Engine","Version":"27.4.0","Details":{"ApiVersion":"1.47","KernelVersion":"6.10.14-linuxkit","Os":"linux"}}],"Version":"27.4.0","ApiVersion":"1.47","MinAPIVersion":"1.24","KernelVersion":"6.10.14-linuxkit","Os":"linux","Arch":"arm64"}`
	podmanVersionJSON        = `{"Platform":{"Name":"linux/amd64/debian-12"},"Components":[{"Name":"Podman Engine","Version":"4.3.1","Details":{"APIVersion":"4.3.1","MinAPIVersion":"4.0.0","Os":"linux"}},{"Name":"Conmon","Version":"conmon version 2.1.6, commit: unknown"},{"Name":"OCI Runtime (runc)","Version":"runc version 1.1.5+ds1"}],"Version":"4.3.1","ApiVersion":"1.41","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64"}`
)

// shortDir is a temporary directory whose paths stay well inside the 108 bytes a unix socket
// path may have (t.TempDir's do not, under long test names).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "loc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// fakeEngine serves GET /version with answer on a unix socket at path (its parent directories
// made), until the test ends.
func fakeEngine(t *testing.T, path, answer string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen on %s: %v", path, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
}

// staleSocket leaves a socket file at path that nobody accepts on, as a stopped engine does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// vars is a fake process environment.
type vars map[string]string

func (v vars) get(k string) string { return v[k] }

// testEnv is a Linux user's environment rooted in a fresh directory: home, system root and
// runtime directory are all inside it, and nothing of the real machine is read.
func testEnv(t *testing.T, uid int, v vars) (Env, string) {
	t.Helper()
	root := shortDir(t)
	if v == nil {
		v = vars{}
	}
	return Env{Getenv: v.get, Home: filepath.Join(root, "home"), GOOS: "linux", UID: func() int { return uid }, SystemRoot: filepath.Join(root, "sys")}, root
}
