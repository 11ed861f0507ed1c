package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Snapshot is the recorded Compose model: the snapshot file and the two names every Compose call
// pairs with it. It holds paths and names only, so it can live in state.json.
type Snapshot struct {
	// Path is the snapshot file (<state>/compose.yaml).
	Path string `json:"path"`
	// Project is the Compose project name.
	Project string `json:"project"`
	// Checkout is the project directory (the OCE checkout).
	Checkout string `json:"checkout"`
}

// RecordedSnapshot is the snapshot the state records for project p.
func RecordedSnapshot(p state.ComposeProject) Snapshot {
	return Snapshot{Path: p.Snapshot, Project: p.Project, Checkout: p.Checkout}
}

// Render returns the model as a Compose file in which every "$" is doubled. The model is
// already interpolated, so any "$" left is a literal character; doubled, it stays literal when
// Compose reads the snapshot again, and no value can be re-interpolated from whatever
// environment a later command runs in.
func (m *Model) Render() ([]byte, error) {
	out, err := m.Project.MarshalYAML()
	if err != nil {
		return nil, fmt.Errorf("render Compose model: %w", err)
	}
	return bytes.ReplaceAll(out, []byte("$"), []byte("$$")), nil
}

// SnapshotMode is the permission bits of the snapshot, private for the credentials it holds.
const SnapshotMode fs.FileMode = 0o600

// WriteSnapshot writes the rendered model to <stateDir>/compose.yaml, exclusively and privately
// (0600: it holds the stack's local database credentials), and returns its record.
func (m *Model) WriteSnapshot(stateDir string) (Snapshot, error) {
	data, err := m.Render()
	if err != nil {
		return Snapshot{}, err
	}
	p := filepath.Join(stateDir, SnapshotName)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, SnapshotMode)
	if errors.Is(err, fs.ErrExist) {
		return Snapshot{}, fmt.Errorf("write Compose snapshot: %s already exists; a state directory records one project only", p)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("write Compose snapshot: %w", err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(p)
		return Snapshot{}, fmt.Errorf("write Compose snapshot %s: %w", p, werr)
	}
	if err := fsutil.SyncDir(stateDir); err != nil {
		return Snapshot{}, fmt.Errorf("write Compose snapshot %s: sync directory: %w", p, err)
	}
	return Snapshot{Path: p, Project: m.Project.Name, Checkout: m.Checkout}, nil
}

// LoadSnapshot reads a snapshot back with compose-go, with no environment and no env file, the
// way the plugin sees it. `status` and the post-`down` check use it to know the recorded
// services, volumes and networks.
func LoadSnapshot(ctx context.Context, s Snapshot) (*types.Project, error) {
	if err := checkPrivateFile(s.Path); err != nil {
		return nil, fmt.Errorf("Compose snapshot: %w", err)
	}
	po, err := cli.NewProjectOptions([]string{s.Path},
		cli.WithWorkingDirectory(s.Checkout),
		cli.WithName(s.Project),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return nil, fmt.Errorf("load Compose snapshot %s: %w", s.Path, err)
	}
	p, err := po.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("load Compose snapshot %s: %w", s.Path, err)
	}
	return p, nil
}

// checkPrivateFile requires a regular file (not a symlink) owned by the current user with no
// group or other permissions: the snapshot decides what `down` deletes, so nobody else may be
// able to change it.
func checkPrivateFile(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s must be a private regular file owned by the current user (found %s); it was not written by occ dev up, or was changed since", p, fi.Mode())
	}
	return nil
}
