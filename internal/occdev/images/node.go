package images

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
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
	eng  engine.Engine
	node string
}

func (n nodeContainerd) ctr(ctx context.Context, args ...string) (string, error) {
	cmd := append([]string{"ctr", "-n", criNamespace}, args...)
	res, err := n.eng.Exec(ctx, n.node, engine.ExecInput{}, cmd...)
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
	Manifests []indexEntry `json:"manifests"`
}

// indexEntry is one manifest an index names, with the platform it is for (none for an entry
// that is not an image: BuildKit's attestation manifests say unknown/unknown).
type indexEntry struct {
	Digest   string `json:"digest"`
	Platform *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
	} `json:"platform"`
}

// ctrResult is what one ctr command of a batch printed, and its exit code.
type ctrResult struct {
	cmd            []string
	stdout, stderr string
	exitCode       int
}

// err is the command's failure, worded as ctr's single-command errors are.
func (r ctrResult) err(node string) error {
	if r.exitCode == 0 {
		return nil
	}
	return fmt.Errorf("%s in node %s exited with %d: %s", strings.Join(r.cmd, " "), node, r.exitCode, strings.TrimSpace(r.stderr+" "+r.stdout))
}

// batch runs ctr commands (the arguments after "ctr -n k8s.io") in the node one after another,
// in a single exec through the node's shell, and returns what each printed and its exit code.
// Every exec costs a process start in the node and several engine round trips, which is most
// of a check's time; one exec carries a whole phase of checks instead. k3s images ship a POSIX
// shell (k3d's node entrypoint is a shell script). After each command, a line holding a random
// boundary and the command's exit status is printed to stdout and to stderr, which splits both
// streams back into the commands' own output.
func (n nodeContainerd) batch(ctx context.Context, cmds [][]string) ([]ctrResult, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	boundary := "occ-batch-" + hex.EncodeToString(b[:])
	res, err := n.eng.Exec(ctx, n.node, engine.ExecInput{}, "sh", "-c", batchScript(cmds, boundary))
	if err != nil {
		return nil, err
	}
	stdout, codes, oerr := splitBatch(res.Stdout, boundary, len(cmds))
	stderr, _, eerr := splitBatch(res.Stderr, boundary, len(cmds))
	if res.ExitCode != 0 || oerr != nil || eerr != nil {
		return nil, fmt.Errorf("run %d ctr commands through sh in node %s: exit code %d, %v: %s", len(cmds), n.node, res.ExitCode, errors.Join(oerr, eerr), strings.TrimSpace(res.Stderr+" "+res.Stdout))
	}
	out := make([]ctrResult, len(cmds))
	for i, args := range cmds {
		out[i] = ctrResult{cmd: append([]string{"ctr", "-n", criNamespace}, args...), stdout: stdout[i], stderr: stderr[i], exitCode: codes[i]}
	}
	return out, nil
}

// batchScript is the shell script of a batch: each command, then its boundary lines.
func batchScript(cmds [][]string, boundary string) string {
	var script strings.Builder
	for _, args := range cmds {
		script.WriteString("ctr -n " + criNamespace)
		for _, a := range args {
			script.WriteString(" " + shellQuote(a))
		}
		fmt.Fprintf(&script, "; s=$?; printf '\\n%[1]s %%d\\n' \"$s\"; printf '\\n%[1]s %%d\\n' \"$s\" >&2\n", boundary)
	}
	return script.String()
}

// splitBatch cuts a batch's stream into the n commands' output at the boundary lines, and reads
// the exit status each line carries.
func splitBatch(stream, boundary string, n int) ([]string, []int, error) {
	parts := strings.Split(stream, "\n"+boundary+" ")
	if len(parts) != n+1 {
		return nil, nil, fmt.Errorf("the output holds %d of the %d boundary lines", len(parts)-1, n)
	}
	outputs := []string{parts[0]}
	codes := make([]int, 0, n)
	for i, p := range parts[1:] {
		status, rest, ok := strings.Cut(p, "\n")
		code, err := strconv.Atoi(status)
		if !ok || err != nil || (i == n-1 && rest != "") {
			return nil, nil, fmt.Errorf("boundary line %d is malformed: %q", i+1, p)
		}
		codes = append(codes, code)
		if i < n-1 {
			outputs = append(outputs, rest)
		}
	}
	return outputs, codes, nil
}

// shellQuote quotes s as one word for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// nodeContent is an image in the node followed down to its config: the image's target (what
// its name points at), the manifest the node runs (the target itself, or the entry an index
// target lists for the node's platform) and that manifest's config digest.
type nodeContent struct {
	Target, Manifest, Config string
}

// follow reads, for each target, the manifest the node runs and its config digest: a manifest
// target is read itself; an index target (an import of a whole multi-platform image, or of
// docker save output that wraps one manifest in an index) is followed to the entry for the
// node's platform, which is what the kubelet's CRI runs. The manifests of all targets are read
// in one exec, the entries the indexes name in a second. The result maps each target to what it
// leads to, or to why it leads nowhere.
func (n nodeContainerd) follow(ctx context.Context, targets []string) (map[string]nodeContent, map[string]error, error) {
	found, failed := map[string]nodeContent{}, map[string]error{}
	pending := map[string][]string{} // content digest to read → targets it decides
	for _, t := range targets {
		pending[t] = append(pending[t], t)
	}
	var platform *Platform
	for level := 0; len(pending) > 0; level++ {
		if level == 2 {
			for d, ts := range pending {
				for _, t := range ts {
					failed[t] = fmt.Errorf("content %s in node %s: nested indexes", d, n.node)
				}
			}
			break
		}
		digests := slices.Sorted(maps.Keys(pending))
		cmds := make([][]string, len(digests))
		for i, d := range digests {
			cmds[i] = []string{"content", "get", d}
		}
		res, err := n.batch(ctx, cmds)
		if err != nil {
			return nil, nil, err
		}
		next := map[string][]string{}
		for i, d := range digests {
			m, err := readManifest(res[i], n.node, d)
			if err == nil && m.Config == nil && len(m.Manifests) > 1 && platform == nil {
				// Only an index of several platforms needs the node's platform, which is the
				// engine's: the node is one of its containers.
				p, perr := EnginePlatform(ctx, n.eng, "")
				if perr != nil {
					return nil, nil, perr
				}
				platform = &p
			}
			var child string
			if err == nil && m.Config == nil {
				child, err = m.entryFor(platform, n.node, d)
			}
			for _, t := range pending[d] {
				switch {
				case err != nil:
					failed[t] = err
				case child != "":
					next[child] = append(next[child], t)
				default:
					found[t] = nodeContent{Target: t, Manifest: d, Config: m.Config.Digest}
				}
			}
		}
		pending = next
	}
	return found, failed, nil
}

// readManifest reads one `ctr content get` of digest as a manifest (its config set) or an index.
func readManifest(r ctrResult, node, digest string) (manifestOrIndex, error) {
	if err := r.err(node); err != nil {
		return manifestOrIndex{}, err
	}
	var m manifestOrIndex
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		return manifestOrIndex{}, fmt.Errorf("content %s in node %s is not a manifest: %w", digest, node, err)
	}
	if m.Config != nil && !digestPattern.MatchString(m.Config.Digest) {
		return manifestOrIndex{}, fmt.Errorf("content %s in node %s is a manifest whose config digest %q is not a sha256 digest", digest, node, m.Config.Digest)
	}
	if m.Config == nil && len(m.Manifests) == 0 {
		return manifestOrIndex{}, fmt.Errorf("content %s in node %s is neither a manifest nor an index of manifests", digest, node)
	}
	return m, nil
}

// entryFor is the manifest an index names for platform (nil for an index of one entry, which
// docker save writes around a single manifest): the entry that runs on it (bestFor). Entries that
// are not images (attestations, unknown/unknown) never match.
func (m manifestOrIndex) entryFor(platform *Platform, node, digest string) (string, error) {
	if len(m.Manifests) == 1 && (platform == nil || m.Manifests[0].Platform == nil) {
		return m.Manifests[0].Digest, nil
	}
	i := bestFor(len(m.Manifests), *platform, func(i int) (Platform, bool) {
		e := m.Manifests[i]
		if e.Platform == nil || !digestPattern.MatchString(e.Digest) {
			return Platform{}, false
		}
		return normalisePlatform(e.Platform.OS, e.Platform.Architecture, e.Platform.Variant), true
	})
	if i < 0 {
		return "", fmt.Errorf("content %s in node %s is an index of %d manifests, none of them for the node's platform %s", digest, node, len(m.Manifests), platform)
	}
	return m.Manifests[i].Digest, nil
}

// resolveOne is follow of one target.
func (n nodeContainerd) resolveOne(ctx context.Context, target string) (nodeContent, error) {
	found, failed, err := n.follow(ctx, []string{target})
	if err != nil {
		return nodeContent{}, err
	}
	if err := failed[target]; err != nil {
		return nodeContent{}, err
	}
	return found[target], nil
}

// find returns the row of the image named name in the list. None is found false; rows of the
// name with different targets would be ambiguous and are refused.
func (n nodeContainerd) find(list []nodeImage, name string) (row nodeImage, found bool, err error) {
	var rows []nodeImage
	for _, r := range list {
		if r.Name == name {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nodeImage{}, false, nil
	}
	for _, r := range rows[1:] {
		if r.Digest != rows[0].Digest {
			return nodeImage{}, true, fmt.Errorf("node %s lists image %s twice, with targets %s and %s: ambiguous", n.node, name, rows[0].Digest, r.Digest)
		}
	}
	return rows[0], true, nil
}

// resolve finds the image named name in the list and follows its target to the manifest the
// node runs and its config (find, then follow).
func (n nodeContainerd) resolve(ctx context.Context, list []nodeImage, name string) (content nodeContent, found bool, err error) {
	row, found, err := n.find(list, name)
	if err != nil || !found {
		return nodeContent{}, found, err
	}
	content, err = n.resolveOne(ctx, row.Digest)
	return content, true, err
}
