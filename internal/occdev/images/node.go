package images

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev/docker"
)

// criNamespace is the containerd namespace the kubelet's CRI uses: images must be there for a
// Pod with pullPolicy Never to find them.
const criNamespace = "k8s.io"

var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// nodeImage is one row of `ctr images ls`: a containerd image name and its target.
type nodeImage struct {
	Name      string
	MediaType string
	Digest    string
}

// nodeContainerd reads a node's containerd through `ctr` run with the engine's exec API.
type nodeContainerd struct {
	api  client.APIClient
	node string
}

func (n nodeContainerd) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := append([]string{"ctr", "-n", criNamespace}, args...)
	res, err := docker.Exec(ctx, n.api, n.node, cmd...)
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("%s in node %s exited with %d: %s", strings.Join(cmd, " "), n.node, res.ExitCode, strings.TrimSpace(res.Stderr+" "+res.Stdout))
	}
	return res.Stdout, nil
}

// list returns the images of the CRI namespace.
func (n nodeContainerd) list(ctx context.Context) ([]nodeImage, error) {
	out, err := n.ctr(ctx, "images", "ls")
	if err != nil {
		return nil, err
	}
	return parseImageList(out)
}

// parseImageList reads `ctr images ls` output: a header, then REF TYPE DIGEST SIZE PLATFORMS
// LABELS per line. Only the first three columns are used (SIZE holds a space, "2.1 MiB").
func parseImageList(out string) ([]nodeImage, error) {
	var imgs []nodeImage
	for i, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || (i == 0 && f[0] == "REF") {
			continue
		}
		if len(f) < 3 || !digestPattern.MatchString(f[2]) {
			return nil, fmt.Errorf("unexpected line %d of ctr images ls: %q", i+1, line)
		}
		imgs = append(imgs, nodeImage{Name: f[0], MediaType: f[1], Digest: f[2]})
	}
	return imgs, nil
}

// The parts of OCI and Docker manifests and indexes read here.
type manifestOrIndex struct {
	MediaType string `json:"mediaType"`
	Config    *struct {
		Digest string `json:"digest"`
	} `json:"config"`
	Manifests []struct {
		Digest   string `json:"digest"`
		Platform *struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	} `json:"manifests"`
}

// configDigest follows an image's target (a manifest, or an index of exactly one manifest, which
// is what an import of `docker save` output produces) to the digest of its config blob.
func (n nodeContainerd) configDigest(ctx context.Context, target string) (string, error) {
	for range 2 {
		blob, err := n.ctr(ctx, "content", "get", target)
		if err != nil {
			return "", err
		}
		var m manifestOrIndex
		if err := json.Unmarshal([]byte(blob), &m); err != nil {
			return "", fmt.Errorf("content %s in node %s is not a manifest: %w", target, n.node, err)
		}
		if m.Config != nil && digestPattern.MatchString(m.Config.Digest) {
			return m.Config.Digest, nil
		}
		if len(m.Manifests) != 1 {
			return "", fmt.Errorf("content %s in node %s is an index of %d manifests; occ imports single-platform images and cannot tell which one the kubelet would run", target, n.node, len(m.Manifests))
		}
		target = m.Manifests[0].Digest
	}
	return "", fmt.Errorf("content %s in node %s: nested indexes", target, n.node)
}

// resolve finds the image named name in the list and its config digest. None is ErrAbsent-like
// (found false); rows of the name with different targets would be ambiguous and are refused.
func (n nodeContainerd) resolve(ctx context.Context, list []nodeImage, name string) (row nodeImage, config string, found bool, err error) {
	var rows []nodeImage
	for _, r := range list {
		if r.Name == name {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nodeImage{}, "", false, nil
	}
	for _, r := range rows[1:] {
		if r.Digest != rows[0].Digest {
			return nodeImage{}, "", true, fmt.Errorf("node %s lists image %s twice, with targets %s and %s: ambiguous", n.node, name, rows[0].Digest, r.Digest)
		}
	}
	config, err = n.configDigest(ctx, rows[0].Digest)
	return rows[0], config, true, err
}
