package k3d

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// k3d on Podman fails once with Podman's known log transient while waiting for the node: the
// half-made cluster is removed and the creation runs exactly once more; any other failure, the
// same failure on Docker, a cancelled run, a second transient or a failed removal gets no
// (further) retry.
func TestCreateRetriesOnlyPodmansTransientOnce(t *testing.T) {
	transient := errors.New(`failed waiting for log line 'k3s is up and running' from node 'k3d-x-server-0': failed to obtain logs for node 'k3d-x-server-0': Error response from daemon: unable to open a handle to the library`)
	other := errors.New("failed to start server: port is already allocated")
	cases := []struct {
		name          string
		podman        bool
		cancelled     bool
		results       []error
		removeErr     error
		wantRuns      int
		wantRemovals  int
		wantErr       error
		wantErrSubstr string
	}{
		{name: "the transient on Podman, then success", podman: true, results: []error{transient, nil}, wantRuns: 2, wantRemovals: 1},
		{name: "the transient twice on Podman", podman: true, results: []error{transient, transient}, wantRuns: 2, wantRemovals: 1, wantErr: transient},
		{name: "another error on Podman", podman: true, results: []error{other}, wantRuns: 1, wantErr: other},
		{name: "the same text on Docker", results: []error{transient}, wantRuns: 1, wantErr: transient},
		{name: "a cancelled run", podman: true, cancelled: true, results: []error{transient}, wantRuns: 1, wantErr: transient},
		{name: "the removal fails", podman: true, results: []error{transient}, removeErr: errors.New("container in use"), wantRuns: 1, wantRemovals: 1, wantErr: transient, wantErrSubstr: "container in use"},
		{name: "success at once", podman: true, results: []error{nil}, wantRuns: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancelled {
				cancel()
			}
			runs, removals := 0, 0
			var notes []string
			err := createOnce(ctx, c.podman,
				func() error { runs++; return c.results[runs-1] },
				func() error { removals++; return c.removeErr },
				func(s string) { notes = append(notes, s) })
			if runs != c.wantRuns || removals != c.wantRemovals {
				t.Errorf("runs %d removals %d, want %d and %d", runs, removals, c.wantRuns, c.wantRemovals)
			}
			if c.wantErr == nil && err != nil || c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("err = %v, want %v", err, c.wantErr)
			}
			if c.wantErrSubstr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErrSubstr)) {
				t.Errorf("err = %v, want it to name %q", err, c.wantErrSubstr)
			}
			if (c.wantRuns == 2) != (len(notes) == 1) {
				t.Errorf("notes %q: want one exactly when the creation is retried", notes)
			}
		})
	}
}
