package recorded

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/state"
)

// claim is a freshly claimed state directory that records nothing yet, as `up` leaves it when a
// step fails before creating anything.
func claim(t *testing.T) *state.Dir {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := state.Create(filepath.Join(base, "occ-dev"), state.State{Profile: "existing", Cluster: state.Cluster{Provider: "existing"}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// An `up` that failed early rolls back: the directory it claimed goes and the error says so; when
// the key file outside the records cannot be removed, the directory stays with the command that
// finishes the cleanup.
func TestRollbackDeletesTheStateOnlyWhenEverythingIsGone(t *testing.T) {
	cause := errors.New("install the Gateway: boom")
	d := claim(t)
	err := Rollback{Dir: d, Log: io.Discard, OCC: "occ"}.Run(context.Background(), cause)
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "rolled back: everything this run created was removed, and "+d.Path()+" was deleted") {
		t.Errorf("clean rollback: %v", err)
	}
	if _, serr := os.Stat(d.Path()); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the state directory is still there after a complete rollback: %v", serr)
	}

	d = claim(t)
	err = Rollback{Dir: d, Log: io.Discard, OCC: "occ", Outside: func() error { return errors.New("remove key file: permission denied") }}.Run(context.Background(), cause)
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "rollback incomplete; preserving "+d.Path()) || !strings.Contains(err.Error(), "permission denied") ||
		!strings.Contains(err.Error(), "finish the cleanup with: "+DownCommand("occ", d.Path())) {
		t.Errorf("incomplete rollback: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(d.Path(), state.FileName)); serr != nil {
		t.Errorf("the state of an incomplete rollback is gone: %v", serr)
	}
}

// `occ dev down` of an environment whose up failed before creating anything: nothing to remove,
// the directory goes, and the result's lists are empty, not null.
func TestRemoveAllDeletesAnEmptyRecord(t *testing.T) {
	d := claim(t)
	env := Connect(d.State())
	defer env.Close()
	res, err := RemoveAll(context.Background(), d, env, io.Discard, "occ")
	if err != nil || res == nil || res.Removed == nil || res.LeftAlone == nil || len(res.Removed)+len(res.LeftAlone) != 0 {
		t.Fatalf("RemoveAll = %+v, %v", res, err)
	}
	if _, serr := os.Stat(d.Path()); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the state directory is still there: %v", serr)
	}
}
