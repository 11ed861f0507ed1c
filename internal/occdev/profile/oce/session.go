package oce

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Session is what a started OCE control plane gives the steps after it.
type Session struct {
	// Key is the verified bootstrap service key once written, KeyPath where, and
	// InstallationID the Installation it was verified against.
	Key            *controlplane.ServiceKey
	KeyPath        string
	InstallationID string
	// keyWritten is a key this run wrote at --key-output (outside the state directory), which
	// a failed run removes again: no record holds it and `down` never deletes the user's file.
	// The state directory's own key goes with the directory.
	keyWritten string
	// Namespace is the bootstrap Namespace, once ready.
	Namespace controlplane.BootstrapNamespace
}

// CopyKeyStep is the step that copies the bootstrap key out, by the profile's own means
// (copyOut verifies it against the live Installation before writing it), and then, the same for
// every profile: remembers a --key-output file for the rollback, reads the key back for the
// calls after it and records where it is, never the key. It is a step of any flow whose run is
// a profile.Env; session is that run's Session.
func CopyKeyStep[V any, E profile.Env](describe func(V) step.Description, session func(E) *Session, copyOut func(context.Context, E) (controlplane.InstalledKey, error)) step.Step[V, E] {
	return step.Step[V, E]{Name: "Copy and verify the bootstrap service key", Describe: describe, Run: func(ctx context.Context, env E, _ progress.Reporter) error {
		installed, err := copyOut(ctx, env)
		if err != nil {
			return err
		}
		s := session(env)
		s.KeyPath, s.InstallationID = installed.Path, installed.InstallationID
		if !installed.Owned {
			s.keyWritten = installed.Path
		}
		data, err := os.ReadFile(installed.Path)
		if err != nil {
			return fmt.Errorf("read back the written service key %s: %w", installed.Path, err)
		}
		if s.Key, err = controlplane.ParseServiceKey(data); err != nil {
			return err
		}
		return env.State().Update(func(st *state.State) {
			st.ControlPlane.KeyPath, st.ControlPlane.KeyOwned, st.ControlPlane.InstallationID = installed.Path, installed.Owned, installed.InstallationID
		})
	}}
}

// API is where a profile's OCE API answers for the shared steps.
type API[E any] struct {
	URL string
	// Client is the HTTP client of the calls; nil, or a nil result, is each call's default.
	Client func(E) *http.Client
}

// NamespaceWaitStep is the step that waits, up to timeout, for the bootstrap Namespace: exactly
// one Kubernetes namespace carrying the OCC Namespace label, then the API reporting it ready.
func NamespaceWaitStep[V any, E profile.Env](timeout time.Duration, session func(E) *Session, api API[E]) step.Step[V, E] {
	return step.Step[V, E]{Name: "Wait for the bootstrap Namespace to be ready", Describe: func(V) step.Description { return describeNamespaceWait(timeout, api.URL) }, Run: func(ctx context.Context, env E, rep progress.Reporter) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var client *http.Client
		if api.Client != nil {
			client = api.Client(env)
		}
		s := session(env)
		ns, err := controlplane.WaitBootstrapNamespace(ctx, controlplane.NamespaceWaitOptions{
			Kubernetes: env.Conn().Kube, APIURL: api.URL, Key: s.Key, Client: client,
		})
		if err != nil {
			return err
		}
		rep.Note(fmt.Sprintf("Namespace %s is ready as Kubernetes namespace %s", ns.ID, ns.KubernetesName))
		s.Namespace = ns
		return nil
	}}
}

func describeNamespaceWait(timeout time.Duration, apiURL string) step.Description {
	return step.Note(fmt.Sprintf("nothing created; waits for exactly one Kubernetes namespace labelled %s (annotated with the same ID), then polls GET /namespaces/<id> until it is ready, up to %s", controlplane.NamespaceLabel, timeout)).
		Waiting(controlplane.BootstrapNamespaceWaits(apiURL)...)
}

// RemoveWrittenKey is the control plane's rollback: it removes a key this failed run wrote at
// --key-output.
func (s *Session) RemoveWrittenKey() error {
	if s.keyWritten == "" {
		return nil
	}
	if err := os.Remove(s.keyWritten); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove copied service key: %w", err)
	}
	s.keyWritten = ""
	return nil
}
