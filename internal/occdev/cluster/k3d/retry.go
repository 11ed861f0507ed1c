package k3d

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// podmanTransient are the two parts of the error k3d reports when Podman fails to hand it a node
// container's logs while k3d waits for the node to start ("failed to obtain logs … unable to
// open a handle to the library"): a known Podman transient that a second creation gets past.
var podmanTransient = []string{"failed to obtain logs", "unable to open a handle to the library"}

// isPodmanTransient reports whether err is that transient.
func isPodmanTransient(err error) bool {
	msg := err.Error()
	for _, part := range podmanTransient {
		if !strings.Contains(msg, part) {
			return false
		}
	}
	return true
}

// createOnce runs create, and on Podman, when it fails with the known transient, removes what
// the attempt made and runs it once more: one retry for that one error, never for another error,
// another engine or a cancelled context. A failed removal stops the retry and is reported with
// the first failure; the caller's rollback then runs as for any failed creation.
func createOnce(ctx context.Context, podman bool, create func() error, remove func() error, note func(string)) error {
	err := create()
	if err == nil || !podman || ctx.Err() != nil || !isPodmanTransient(err) {
		return err
	}
	if rerr := remove(); rerr != nil {
		return errors.Join(err, fmt.Errorf("remove the first attempt before the retry after Podman's transient: %w", rerr))
	}
	note(fmt.Sprintf("k3d creation hit Podman's known transient (%v); what it made was removed, creating once more", err))
	return create()
}
