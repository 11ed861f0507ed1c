package artifacts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// SourceArchiveName names the OpenShell source archive in messages.
const SourceArchiveName = "OpenShell source archive"

// HelmDir is where, inside the state directory, the archive's Helm subtree is extracted. It is
// rebuilt by every run from the verified archive, so it is never trusted across runs.
const HelmDir = "openshell/source"

// DescribeArchive is the dry run's account of FetchArchive of pin: file is the local copy it
// verifies instead of a download ("" for none), cacheDir the artifact cache.
func DescribeArchive(pin pins.SourceArchive, file, cacheDir string) step.Description {
	if file != "" {
		return step.Note("nothing downloaded; verifies " + file + " against the pinned sha256")
	}
	return DescribeFetch(pin.Artifact, cacheDir, "the pinned "+SourceArchiveName)
}

// FetchArchive produces the verified OpenShell source archive: the local copy file, which the
// setting local selected, or else the cached or downloaded pinned file. Either way its sha256
// must be the pin's before a byte of it is used.
func (f *Fetcher) FetchArchive(ctx context.Context, pin pins.SourceArchive, file string, local option.Setting) (*Verified, error) {
	if file != "" {
		v, err := OpenVerified(file, pin.SHA256)
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %w", local.Flag, file, err)
		}
		return v, nil
	}
	v, err := f.Fetch(ctx, pin.Artifact)
	if err != nil {
		return nil, fmt.Errorf("%s: %w%s", SourceArchiveName, err, f.OfflineFix(err, local))
	}
	return v, nil
}

// DescribeExtract is the dry run's account of ExtractHelmAfresh into the state directory
// stateDir.
func DescribeExtract(stateDir string) step.Description {
	return step.Describe(step.DirAt(filepath.Join(stateDir, HelmDir), extractDirMode, "only the archive's Helm subtree"))
}

// ExtractHelmAfresh is ExtractHelm into dest, which is cleared first: a previous attempt's tree
// there is ours (inside the private directory) and is rebuilt from the verified archive rather
// than trusted. It closes src once the tree is extracted.
func ExtractHelmAfresh(src *Verified, archive pins.SourceArchive, dest string) error {
	if err := os.RemoveAll(dest); err != nil {
		return fmt.Errorf("clear %s: %w", dest, err)
	}
	if err := ExtractHelm(src, archive, dest); err != nil {
		return err
	}
	return src.Close()
}
