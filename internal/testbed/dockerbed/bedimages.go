package dockerbed

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Node-image environment: ctr (and the played kubelet) talk to the node's containerd in the
// namespace the CRI uses, and unpack with the snapshotter that works inside a container.
var nodeEnv = []string{
	"PATH=/bin:/usr/bin:/sbin:/usr/sbin",
	"CONTAINERD_ADDRESS=/run/k3s/containerd/containerd.sock",
	"CONTAINERD_NAMESPACE=k8s.io",
	"CONTAINERD_SNAPSHOTTER=native",
}

// baseDirs are the directories k3d and its scripts write to in a node.
var baseDirs = []File{
	{Path: "tmp", Dir: true, Mode: 0o1777},
	{Path: "var/log", Dir: true},
	{Path: "etc/rancher/k3s", Dir: true},
	{Path: "output", Dir: true},
	{Path: "run", Dir: true},
	{Path: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
	{Path: "etc/group", Data: []byte("root:x:0:\n")},
	{Path: "root", Dir: true, Mode: 0o700},
}

// NodeImage is the k3s stand-in node: busybox, the real control-plane binaries, real containerd
// and ctr, and the stand-in as /bin/k3s (with kubectl and the iptables tools linked to it). It is
// laid out like the k3s image: entrypoint /bin/k3s, command "agent", and volumes for the data
// directories, so the node's state lives in anonymous volumes that k3d deletes with the node.
// The registry serves it as k3s's release workflow publishes rancher/k3s (docker/build-push-action
// on a containerd-store Docker): an OCI image index with an attestation manifest per platform.
func NodeImage() (ImageSpec, error) {
	bin, err := LocateBinaries()
	if err != nil {
		return ImageSpec{}, err
	}
	files, err := BusyboxFiles()
	if err != nil {
		return ImageSpec{}, err
	}
	files = append(files, baseDirs...)
	files = append(files,
		File{Path: "bin/k3s", Source: bin.Standin, Mode: 0o755},
		File{Path: "bin/containerd", Source: bin.Containerd, Mode: 0o755},
		File{Path: "bin/ctr", Source: bin.Ctr, Mode: 0o755},
		File{Path: "bin/etcd", Source: bin.Etcd, Mode: 0o755},
		File{Path: "bin/kube-apiserver", Source: bin.KubeAPIServer, Mode: 0o755},
		File{Path: "bin/kube-controller-manager", Source: bin.KubeControllerManager, Mode: 0o755},
		File{Path: "bin/kube-scheduler", Source: bin.KubeScheduler, Mode: 0o755},
		File{Path: "var/lib/rancher/k3s", Dir: true},
	)
	for _, link := range []string{"kubectl", "iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		files = append(files, File{Path: "bin/" + link, Link: "k3s"})
	}
	return ImageSpec{
		Repo:   "occ-bed/k3s",
		Files:  files,
		Served: OCIIndexWithAttestations,
		Config: v1.Config{
			Entrypoint: []string{"/bin/k3s"},
			Cmd:        []string{"agent"},
			Env:        nodeEnv,
			Volumes: map[string]struct{}{
				"/var/lib/kubelet": {}, "/var/lib/rancher/k3s": {}, "/var/lib/cni": {}, "/var/log": {},
			},
			Labels: map[string]string{
				"org.opencontainers.image.title":       "occ k3s stand-in node",
				"org.opencontainers.image.description": "test-bed stand-in for rancher/k3s: real containerd, etcd, kube-apiserver, kube-controller-manager, kube-scheduler; played kubelet",
			},
		},
	}, nil
}

// ToolsImage stands in for ghcr.io/k3d-io/k3d-tools: /app/k3d-tools (the stand-in) with busybox.
// The registry serves it as a Docker manifest list of linux/amd64 and linux/arm64, the shape
// multi-platform images published with `docker manifest` or manifest-tool have, so that one bed
// image has it.
func ToolsImage() (ImageSpec, error) {
	bin, err := LocateBinaries()
	if err != nil {
		return ImageSpec{}, err
	}
	files, err := BusyboxFiles()
	if err != nil {
		return ImageSpec{}, err
	}
	files = append(files, baseDirs...)
	files = append(files, File{Path: "app/k3d-tools", Source: bin.Standin, Mode: 0o755})
	return ImageSpec{
		Repo:   "occ-bed/k3d-tools",
		Files:  files,
		Served: DockerManifestList,
		Config: v1.Config{
			Entrypoint: []string{"/app/k3d-tools"},
			Cmd:        []string{"noop"},
			WorkingDir: "/app",
			Env:        []string{"PATH=/bin:/app"},
			Labels:     map[string]string{"org.opencontainers.image.title": "occ k3d-tools stand-in"},
		},
	}, nil
}

// ProxyImage stands in for ghcr.io/k3d-io/k3d-proxy: a TCP forwarder that follows the
// /etc/confd/values.yaml k3d writes.
func ProxyImage() (ImageSpec, error) {
	bin, err := LocateBinaries()
	if err != nil {
		return ImageSpec{}, err
	}
	files, err := BusyboxFiles()
	if err != nil {
		return ImageSpec{}, err
	}
	files = append(files, baseDirs...)
	files = append(files,
		File{Path: "bin/k3d-proxy", Source: bin.Standin, Mode: 0o755},
		File{Path: "etc/confd", Dir: true},
	)
	return ImageSpec{
		Repo:  "occ-bed/k3d-proxy",
		Files: files,
		Config: v1.Config{
			Entrypoint: []string{"/bin/k3d-proxy"},
			Env:        []string{"PATH=/bin"},
			Labels:     map[string]string{"org.opencontainers.image.title": "occ k3d-proxy stand-in"},
		},
	}, nil
}

// Standin roles for the pinned product images.
const (
	RoleGateway    = "openshell-gateway"
	RoleSandbox    = "openshell-sandbox"
	RoleSupervisor = "openshell-supervisor"
)

// ProductImage is a tiny stand-in for one of the pinned OpenShell images (RoleGateway,
// RoleSandbox, RoleSupervisor, or any other name): busybox and a file naming the role, so each
// role has its own digest. Nothing in the bed runs it (the kubelet is played); it exists to be
// pulled by digest, imported into a cluster and verified there. The registry serves it as occ's
// pins require and BuildKit publishes: an OCI image index of linux/amd64 and linux/arm64 with an
// attestation manifest for each.
func ProductImage(role string) (ImageSpec, error) {
	files, err := BusyboxFiles()
	if err != nil {
		return ImageSpec{}, err
	}
	files = append(files, File{Path: "etc/occ-standin/role", Data: []byte(role + "\n")})
	return ImageSpec{
		Repo:   "occ-bed/" + role,
		Files:  files,
		Served: OCIIndexWithAttestations,
		Config: v1.Config{
			Entrypoint: []string{"/bin/sh", "-c", "cat /etc/occ-standin/role; exec sleep 2147483647"},
			Env:        []string{"PATH=/bin"},
			Labels: map[string]string{
				"org.opencontainers.image.title": "occ stand-in for " + role,
			},
		},
	}, nil
}

// SizedImage is an image whose single layer holds one file of size bytes of incompressible
// data, for measuring import time against image size. The data is generated once per size
// (deterministically, so equal sizes give equal digests) into the bed's cache.
func SizedImage(size int64) (ImageSpec, error) {
	dir := filepath.Join(cacheDir(), "blobs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ImageSpec{}, err
	}
	path := filepath.Join(dir, fmt.Sprintf("random-%d", size))
	if fi, err := os.Stat(path); err != nil || fi.Size() != size {
		if err := writeRandom(path, size); err != nil {
			return ImageSpec{}, err
		}
	}
	return ImageSpec{
		Repo:   fmt.Sprintf("occ-bed/sized-%d", size),
		Files:  []File{{Path: "data/blob", Source: path}},
		Config: v1.Config{Cmd: []string{"/data/blob"}},
	}, nil
}

func writeRandom(path string, size int64) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	r := rand.NewChaCha8([32]byte{'o', 'c', 'c'})
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := int64(len(buf))
		if left < n {
			n = left
		}
		_, _ = r.Read(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
