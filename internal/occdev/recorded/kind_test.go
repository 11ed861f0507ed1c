package recorded_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
)

// typeScratchFile is a record kind only this test has: a file occ "made", removed only while it
// still holds the content recorded by digest. Its whole definition is the init function and
// the remover below, in the test's own file: a new record kind touches only the layer that
// makes its records, and status and down handle it through the store's registry.
const typeScratchFile state.Type = "test-scratch-file"

func init() {
	state.Register(state.Kind{
		Type: typeScratchFile, Fields: state.Fields{Digest: true}, Order: state.InReverse,
		Check: func(o state.Object) error {
			if !filepath.IsAbs(o.Name) || o.Digest == "" {
				return errors.New("a scratch file record needs an absolute path and a digest")
			}
			return nil
		},
		Describe: func(o state.Object) string { return "scratch file " + filepath.Base(o.Name) },
		Remover:  func(*state.Connections) state.Remover { return scratchRemover{} },
	})
}

type scratchRemover struct{}

func digestOf(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }

func (scratchRemover) Inspect(_ context.Context, o state.Object) state.Inspection {
	b, err := os.ReadFile(o.Name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return state.Inspection{State: state.Missing}
	case err != nil:
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	case digestOf(b) != o.Digest:
		return state.Inspection{State: state.Changed, Detail: "its content is not the recorded one"}
	}
	return state.Inspection{State: state.Present}
}

func (r scratchRemover) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	switch in := r.Inspect(ctx, o); in.State {
	case state.Missing:
		return state.Removal{Outcome: state.AlreadyGone}, nil
	case state.Changed:
		return state.Removal{Outcome: state.LeftAlone, Detail: in.Detail}, nil
	case state.Unknown:
		return state.Removal{}, errors.New(in.Detail)
	}
	return state.Removal{Outcome: state.Removed}, os.Remove(o.Name)
}

// TestARecordKindRegisteredByItsLayer records objects of the test-only kind, and checks that
// status inspects them and down removes them through the registry alone: the one that is still
// ours is removed, the one whose content changed is left alone and untouched, the one already
// gone is forgotten, and the state records nothing afterwards.
func TestARecordKindRegisteredByItsLayer(t *testing.T) {
	scratch, stateDir := t.TempDir(), filepath.Join(t.TempDir(), "state")
	d, err := state.Create(stateDir, state.State{Profile: "compose", Cluster: state.Cluster{Provider: "existing"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	record := func(name, content string) string {
		path := filepath.Join(scratch, name)
		if err := d.Record(state.Object{Type: typeScratchFile, Name: path, Digest: digestOf([]byte(content))}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ours, changed, gone := record("ours", "made by up"), record("changed", "made by up"), record("gone", "made by up")
	if err := os.WriteFile(changed, []byte("someone else's now"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}

	st, err := observe.GetStatus(context.Background(), stateDir, "", observe.Parts{})
	if err != nil {
		t.Fatal(err)
	}
	var states []state.Liveness
	for _, o := range st.Objects {
		states = append(states, o.State)
	}
	if want := []state.Liveness{state.Present, state.Changed, state.Missing}; !slices.Equal(states, want) {
		t.Fatalf("status of the records = %v, want %v", states, want)
	}

	env := recorded.Connect(d.State())
	defer env.Close()
	res, err := recorded.Remove(context.Background(), d, env, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 2 || len(res.LeftAlone) != 1 {
		t.Errorf("removed %q, left alone %q; want ours and gone removed, changed left alone", res.Removed, res.LeftAlone)
	}
	if _, err := os.Stat(ours); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the file still ours was not removed: %v", err)
	}
	if b, err := os.ReadFile(changed); err != nil || string(b) != "someone else's now" {
		t.Errorf("the changed file was touched: %q, %v", b, err)
	}
	if n := len(d.State().Objects); n != 0 {
		t.Errorf("the state still records %d object(s) after down", n)
	}
}
