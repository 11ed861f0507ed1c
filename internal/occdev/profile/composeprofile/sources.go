package composeprofile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/state"
)

// SourcesFile records, in the state directory, the digest of every file the Compose
// model of `up` was read from, so `reload`, which repeats the recorded snapshot, can tell that
// the developer has since edited them. It is kept apart from state.json because it names the
// developer's env files.
const SourcesFile = "compose-sources.json"

// composeSource is one file the model was read from; an empty Digest records that it did not
// exist (the checkout's optional .env).
type composeSource struct {
	Path   string `json:"path"`
	Digest string `json:"digest,omitempty"`
}

// digestFile returns the sha256 of the file at path, "" when it does not exist.
func digestFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// sourcesMode is the permission bits of SourcesFile.
const sourcesMode = 0o600

// writeSources records the digests of paths in the state directory.
func writeSources(d *state.Dir, paths []string) error {
	var srcs []composeSource
	for _, p := range paths {
		dg, err := digestFile(p)
		if err != nil {
			return fmt.Errorf("read Compose source %s: %w", p, err)
		}
		srcs = append(srcs, composeSource{Path: p, Digest: dg})
	}
	data, err := json.MarshalIndent(srcs, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(d.File(SourcesFile), append(data, '\n'), sourcesMode)
}

// ChangedSources returns the recorded files whose content differs now (edited, removed
// or created). A state without the record (an `up` of an earlier occ) has none to compare.
func ChangedSources(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, SourcesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var srcs []composeSource
	if err := json.Unmarshal(data, &srcs); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, SourcesFile), err)
	}
	var changed []string
	for _, s := range srcs {
		dg, err := digestFile(s.Path)
		if err != nil {
			return nil, fmt.Errorf("read Compose source %s: %w", s.Path, err)
		}
		if dg != s.Digest {
			changed = append(changed, s.Path)
		}
	}
	return changed, nil
}
