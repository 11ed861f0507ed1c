package controlplane

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testEngine connects to the private test engine (export DOCKER_HOST=$(scripts/testdocker)). A
// missing engine fails the test unless OCC_TEST_DOCKER=skip says to skip it.
func testEngine(t *testing.T) *client.Client {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("OCC_TEST_DOCKER") == "skip" {
			t.Skipf("skipped because OCC_TEST_DOCKER=skip: %s", msg)
		}
		t.Fatalf("%s (start the test engine with export DOCKER_HOST=$(scripts/testdocker), or set OCC_TEST_DOCKER=skip)", msg)
	}
	if os.Getenv("DOCKER_HOST") == "" {
		fail("DOCKER_HOST is not set")
	}
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		fail("Docker client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx); err != nil {
		fail("Docker engine at %s does not answer: %v", os.Getenv("DOCKER_HOST"), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func randomName(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// removeImageAtEnd removes ref from the shared engine when the test ends.
func removeImageAtEnd(t *testing.T, c *client.Client, ref string) {
	t.Cleanup(func() {
		_, err := c.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true, PruneChildren: true})
		if err != nil && !strings.Contains(err.Error(), "No such image") {
			t.Logf("remove test image %s: %v", ref, err)
		}
	})
}

// testRegistry is an in-process registry on 127.0.0.1, which the engine pulls from over plain
// HTTP (loopback registries are insecure-by-default in Docker). Pulling from it gives local
// images a repository digest, the only way an engine knows an image by digest reference.
func testRegistry(t *testing.T) string {
	srv := httptest.NewServer(registry.New(registry.Logger(nilLogger())))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// pulledImage pushes a one-layer image with labels to the test registry, pulls it into the
// engine by digest and returns the digest reference (registry/repo@sha256:…).
func pulledImage(t *testing.T, c *client.Client, host, repo string, labels map[string]string) string {
	t.Helper()
	layer := static.NewLayer(tarOf(t, map[string]string{"marker": repo}), types.DockerLayer)
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config = v1.Config{Labels: labels}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("%s/%s@%s", host, repo, digest)
	parsed, err := name.NewDigest(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(parsed, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	rc, err := c.ImagePull(context.Background(), ref, image.PullOptions{})
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	defer rc.Close()
	if err := drainJSONStream(rc); err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	removeImageAtEnd(t, c, ref)
	return ref
}

func drainJSONStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct{ Error string }
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeTar(&buf, files); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func nilLogger() *log.Logger { return log.New(io.Discard, "", 0) }

// writeTar writes files (name → content) as a tar, in name order.
func writeTar(w io.Writer, files map[string]string) error {
	tw := tar.NewWriter(w)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, files[n]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// imageFiles lists the paths in every layer of ref, read from the engine's image export.
func imageFiles(t *testing.T, c *client.Client, ref string) map[string]bool {
	t.Helper()
	rc, err := c.ImageSave(context.Background(), []string{ref})
	if err != nil {
		t.Fatalf("save %s: %v", ref, err)
	}
	defer rc.Close()
	files := map[string]bool{}
	outer := tar.NewReader(rc)
	for {
		h, err := outer.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read export of %s: %v", ref, err)
		}
		if !strings.HasSuffix(h.Name, "/layer.tar") && !strings.HasPrefix(h.Name, "blobs/") {
			continue
		}
		// The containerd image store saves layers as they are stored, gzip-compressed; the
		// classic store saves them as plain tars.
		var layer io.Reader = outer
		br := bufio.NewReader(outer)
		if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
			zr, err := gzip.NewReader(br)
			if err != nil {
				t.Fatalf("read a gzip layer of %s: %v", ref, err)
			}
			layer = zr
		} else {
			layer = br
		}
		inner := tar.NewReader(layer)
		for {
			ih, err := inner.Next()
			if err != nil {
				break // not a layer (a config blob), or the end of the layer
			}
			files[strings.TrimPrefix(ih.Name, "./")] = true
		}
	}
	return files
}
