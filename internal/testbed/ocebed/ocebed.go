// Package ocebed is the OCE part of the Docker test bed: it builds the ocestandin binary, puts it
// into stand-in images under the tags the fixture checkout's compose files use (so Compose
// builds and runs them without a registry), copies the fixture checkout
// (testdata/oce-checkout) into a test's own directory with git metadata, and picks the
// per-test settings (ports, subnet, project name) that keep concurrent tests apart on the
// shared engine. Only tests import it.
package ocebed

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// The tags the fixture's compose files name. The node base is what the Dockerfile's
// development stage builds FROM (NODE_BASE_IMAGE's default); postgres is compose.postgres.yaml's
// image. Preloaded with stand-ins, Compose never pulls either.
const (
	NodeBaseTag        = "docker.io/library/node:24-bookworm"
	NodeRuntimeBaseTag = "docker.io/library/node:24-bookworm-slim"
	PostgresTag        = "docker.io/library/postgres:18.6"
)

var (
	buildMu sync.Mutex
	binPath string
)

// RepoRoot is the occ module root, found from the test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/openclaw/occ\n") {
			return d
		}
		if d == filepath.Dir(d) {
			t.Fatalf("ocebed: no occ module root above %s", dir)
		}
	}
}

// StandinBinary builds internal/testbed/ocestandin (static, stripped) once per test binary and
// returns its path. It is built again when the file is gone: a test that points TMPDIR at its
// own directory (the k3d bed does) takes an earlier build with it when it ends.
func StandinBinary(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	buildMu.Lock()
	defer buildMu.Unlock()
	if binPath != "" {
		if _, err := os.Stat(binPath); err == nil {
			return binPath
		}
	}
	dir, err := os.MkdirTemp("", "ocestandin-")
	if err != nil {
		t.Fatalf("ocebed: %v", err)
	}
	path := filepath.Join(dir, "ocestandin")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", path, "./internal/testbed/ocestandin")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ocebed: go build ocestandin: %v\n%s", err, out)
	}
	binPath = path
	return binPath
}

// Images are the stand-in images, loaded and tagged.
type Images struct {
	// NodeBase carries busybox and ocestandin as /usr/local/bin/node, a node user (1000:1000)
	// and /tmp; tagged NodeBaseTag and NodeRuntimeBaseTag.
	NodeBase dockerbed.LocalImage
	// Postgres carries ocestandin as docker-entrypoint.sh and pg_isready; tagged PostgresTag.
	Postgres dockerbed.LocalImage
}

// EnsureImages builds and loads the stand-in images (reused when already loaded: the tags are
// content hashes) and points the fixture's tags at them.
func EnsureImages(t testing.TB, e *dockerbed.Engine) Images {
	t.Helper()
	node, pg := NodeSpec(t), PostgresSpec(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var imgs Images
	var err error
	if imgs.NodeBase, err = e.EnsureImage(ctx, node); err != nil {
		t.Fatal(err)
	}
	if imgs.Postgres, err = e.EnsureImage(ctx, pg); err != nil {
		t.Fatal(err)
	}
	for tag, img := range map[string]dockerbed.LocalImage{NodeBaseTag: imgs.NodeBase, NodeRuntimeBaseTag: imgs.NodeBase, PostgresTag: imgs.Postgres} {
		if err := e.API.ImageTag(ctx, img.Tag, tag); err != nil {
			t.Fatalf("ocebed: tag %s as %s: %v", img.Tag, tag, err)
		}
	}
	return imgs
}

// standinFiles are the files both stand-in images share: busybox, the users of the real
// images (node 1000, postgres 999) and a writable /tmp.
func standinFiles(t testing.TB) []dockerbed.File {
	t.Helper()
	busybox, err := dockerbed.BusyboxFiles()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]dockerbed.File{}, busybox...),
		dockerbed.File{Path: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\npostgres:x:999:999::/var/lib/postgresql:/bin/sh\n")},
		dockerbed.File{Path: "etc/group", Data: []byte("root:x:0:\nnode:x:1000:\npostgres:x:999:\n")},
		dockerbed.File{Path: "tmp", Dir: true, Mode: 0o1777},
		dockerbed.File{Path: "home/node", Dir: true},
	)
}

// NodeSpec is the stand-in of the Node base image: ocestandin as /usr/local/bin/node. The
// Kubernetes-only tests serve it from the bed's registry, so it is pulled by digest and used as
// NODE_BASE_IMAGE the way the pinned Node image is.
func NodeSpec(t testing.TB) dockerbed.ImageSpec {
	t.Helper()
	return dockerbed.ImageSpec{
		Repo:  "occ-bed/oce-node",
		Files: append(standinFiles(t), dockerbed.File{Path: "usr/local/bin/node", Source: StandinBinary(t), Mode: 0o755}),
		Config: v1.Config{
			Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			Cmd: []string{"node"},
		},
	}
}

// PostgresSpec is the stand-in of the PostgreSQL image: ocestandin as docker-entrypoint.sh and
// pg_isready. The Kubernetes-only tests serve it from the bed's registry as the pinned
// PostgreSQL is served from Docker Hub: an official image, an OCI index with an attestation
// manifest per platform.
func PostgresSpec(t testing.TB) dockerbed.ImageSpec {
	t.Helper()
	return dockerbed.ImageSpec{
		Repo:   "occ-bed/oce-postgres",
		Served: dockerbed.OCIIndexWithAttestations,
		Files: append(standinFiles(t),
			dockerbed.File{Path: "usr/local/bin/docker-entrypoint.sh", Source: StandinBinary(t), Mode: 0o755},
			dockerbed.File{Path: "usr/bin/pg_isready", Link: "/usr/local/bin/docker-entrypoint.sh"},
			dockerbed.File{Path: "var/lib/postgresql", Dir: true, Mode: 0o700},
		),
		Config: v1.Config{
			Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
			Entrypoint:   []string{"docker-entrypoint.sh"},
			Cmd:          []string{"postgres"},
			ExposedPorts: map[string]struct{}{"5432/tcp": {}},
		},
	}
}

// The tags the metrics overlay's stand-ins are loaded under, and the overlay that makes the
// fixture's compose.metrics.yaml use them (its images are the real file's digests, which no
// stand-in can carry).
const (
	PrometheusTag  = "occ-bed/prometheus:standin"
	GrafanaTag     = "occ-bed/grafana:standin"
	MetricsOverlay = "services:\n" +
		"  prometheus: {image: " + PrometheusTag + "}\n" +
		"  metrics-api: {image: " + PrometheusTag + "}\n" +
		"  metrics-worker: {image: " + PrometheusTag + "}\n" +
		"  grafana: {image: " + GrafanaTag + "}\n"
	// CollectorTag is the stand-in of the logging overlay's OpenTelemetry Collector, and
	// LoggingOverlay the overlay that makes the fixture's compose.logging.yaml use it.
	CollectorTag   = "occ-bed/otelcol:standin"
	LoggingOverlay = "services:\n  collector: {image: " + CollectorTag + "}\n"
)

// MetricsImageSpecs are the stand-ins of the overlays' images by the tag each is used under:
// Prometheus (ocestandin as /bin/prometheus), Grafana (ocestandin as /run.sh) and the
// OpenTelemetry Collector (ocestandin as /otelcol-contrib).
func MetricsImageSpecs(t testing.TB) map[string]dockerbed.ImageSpec {
	t.Helper()
	return map[string]dockerbed.ImageSpec{
		PrometheusTag: {Repo: "occ-bed/oce-prometheus", Files: append(standinFiles(t), dockerbed.File{Path: "bin/prometheus", Source: StandinBinary(t), Mode: 0o755}),
			Config: v1.Config{Env: []string{"PATH=/bin:/usr/bin"}, Entrypoint: []string{"/bin/prometheus"}, Cmd: []string{"--config.file=/etc/prometheus/prometheus.yml"}}},
		GrafanaTag: {Repo: "occ-bed/oce-grafana", Files: append(standinFiles(t), dockerbed.File{Path: "run.sh", Source: StandinBinary(t), Mode: 0o755}),
			Config: v1.Config{Env: []string{"PATH=/bin:/usr/bin"}, Entrypoint: []string{"/run.sh"}}},
		CollectorTag: {Repo: "occ-bed/oce-otelcol", Files: append(standinFiles(t), dockerbed.File{Path: "otelcol-contrib", Source: StandinBinary(t), Mode: 0o755}),
			Config: v1.Config{Env: []string{"PATH=/bin:/usr/bin"}, Entrypoint: []string{"/otelcol-contrib"}, Cmd: []string{"--config=/etc/otelcol-contrib/config.yaml"}}},
	}
}

// EnsureMetricsImages builds and loads the overlays' stand-ins (MetricsImageSpecs) and tags
// them.
func EnsureMetricsImages(t testing.TB, e *dockerbed.Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for tag, spec := range MetricsImageSpecs(t) {
		img, err := e.EnsureImage(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.API.ImageTag(ctx, img.Tag, tag); err != nil {
			t.Fatalf("ocebed: tag %s as %s: %v", img.Tag, tag, err)
		}
	}
}

// ChartPlaceholder is the file that makes a directory an OCE checkout for detection; the
// fixture's chart subtree belongs to the Kubernetes-only work, so a test that needs detection
// from a copy creates a minimal one when the fixture has none.
const ChartPlaceholder = "deploy/helm/openclaw-enterprise/Chart.yaml"

// Checkout copies testdata/oce-checkout into a new directory of the test, adds the chart
// placeholder when missing, and gives it git metadata (a loose branch ref at commit) so the
// commit can be read. It returns the copy's canonical path.
func Checkout(t testing.TB, commit string) string {
	t.Helper()
	src := filepath.Join(RepoRoot(t), "testdata", "oce-checkout")
	dst := filepath.Join(t.TempDir(), "oce")
	if err := copyTree(src, dst); err != nil {
		t.Fatalf("ocebed: copy fixture checkout: %v", err)
	}
	chart := filepath.Join(dst, filepath.FromSlash(ChartPlaceholder))
	if _, err := os.Stat(chart); os.IsNotExist(err) {
		mustWrite(t, chart, "apiVersion: v2\nname: openclaw-enterprise\nversion: 0.0.0-fixture\n")
	}
	mustWrite(t, filepath.Join(dst, ".git", "HEAD"), "ref: refs/heads/main\n")
	mustWrite(t, filepath.Join(dst, ".git", "refs", "heads", "main"), commit+"\n")
	real, err := filepath.EvalSymlinks(dst)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

func mustWrite(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// Settings are the per-test values that keep concurrent stacks apart on one engine.
type Settings struct {
	// Project is a unique Compose project name.
	Project string
	// APIPort and PostgresPort are free loopback ports (OPENCLAW_DEV_PORT, OCC_POSTGRES_PORT).
	APIPort, PostgresPort int
	// Subnet is a /24 that no network on the engine uses (OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR).
	Subnet string
}

// Env is the interpolation environment that applies the settings.
func (s Settings) Env() map[string]string {
	return map[string]string{
		"OPENCLAW_DEV_PORT":                   fmt.Sprint(s.APIPort),
		"OCC_POSTGRES_PORT":                   fmt.Sprint(s.PostgresPort),
		"OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR": s.Subnet,
	}
}

// NewSettings picks a unique project name, two free ports and a subnet in 10.213.0.0/16 (outside
// the address pools of the bed's engines) that overlaps no network of the engine and no address
// of the host: a network of the bed's other engine (or of another run's) has its bridge there.
func NewSettings(t testing.TB, e *dockerbed.Engine) Settings {
	t.Helper()
	s := Settings{Project: strings.ReplaceAll(dockerbed.UniqueName(t, "occ"), "-", "_")}
	// A port is free until bound, so the system may hand out the same one twice.
	s.APIPort, s.PostgresPort = freePort(t), freePort(t)
	for s.PostgresPort == s.APIPort {
		s.PostgresPort = freePort(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nets, err := e.API.NetworkList(ctx, network.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var used []netip.Prefix
	for _, n := range nets {
		for _, c := range n.IPAM.Config {
			if p, err := netip.ParsePrefix(c.Subnet); err == nil {
				used = append(used, p)
			}
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if p, err := netip.ParsePrefix(ipn.String()); err == nil {
				used = append(used, p.Masked())
			}
		}
	}
	for range 1000 {
		var b [2]byte
		_, _ = rand.Read(b[:])
		third := binary.BigEndian.Uint16(b[:]) % 256
		p := netip.MustParsePrefix(fmt.Sprintf("10.213.%d.0/24", third))
		free := true
		for _, u := range used {
			if u.Overlaps(p) {
				free = false
			}
		}
		if free {
			s.Subnet = p.String()
			return s
		}
	}
	t.Fatal("ocebed: no free /24 in 10.213.0.0/16")
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
