package occdev

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// The steps and pieces every OCE control-plane profile shares, whichever way it runs OCE: the
// image builds from the checkout, the verified bootstrap key, the bootstrap Namespace wait and
// the rollback of a key a failed run wrote. A profile supplies only what differs (how the key
// is read out, where the API answers).

// oceSession is what a started OCE control plane gives the steps after it.
type oceSession struct {
	// key is the verified bootstrap service key once written, keyPath where, and
	// installationID the Installation it was verified against.
	key            *controlplane.ServiceKey
	keyPath        string
	installationID string
	// keyWritten is a key this run wrote at --key-output (outside the state directory), which
	// a failed run removes again: no record holds it and `down` never deletes the user's file.
	// The state directory's own key goes with the directory.
	keyWritten string
	// namespace is the bootstrap Namespace, once ready.
	namespace controlplane.BootstrapNamespace
}

// oceAPI is where a profile's OCE API answers for the shared steps.
type oceAPI struct {
	url string
	// client is the HTTP client of the calls; nil, or a nil result, is each call's default.
	client func(*run) *http.Client
}

func (a oceAPI) httpClient(r *run) *http.Client {
	if a.client == nil {
		return nil
	}
	return a.client(r)
}

// buildControlPlaneImages runs the control plane's builds from the checkout through the
// engine's BuildKit, in order, and records them: each image in the state's control-plane record
// (role, tag, image ID), and all of them in the build record `occ dev reload` repeats. It
// returns the images that run in the cluster, by role, as the import takes them.
func buildControlPlaneImages(ctx context.Context, r *run, builds []recordedBuild, progress func(string)) (map[string]images.Local, error) {
	imported := map[string]images.Local{}
	var recs []state.ControlPlaneImage
	for _, b := range builds {
		img, err := controlplane.BuildImage(ctx, r.engine.API, b.request(progress))
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", b.what(), err)
		}
		if b.Imported {
			if imported[b.Role], err = images.Built(ctx, r.engine.API, img.Reference, img.ID); err != nil {
				return nil, err
			}
		}
		recs = append(recs, state.ControlPlaneImage{Role: b.Role, Reference: img.Reference, ID: img.ID})
	}
	if err := writeBuilds(r.state, builds); err != nil {
		return nil, err
	}
	return imported, r.recordImages(recs...)
}

// what names the image b builds in errors: "the image of controller, worker-kubernetes", "the
// Agent runtime image", "the controller image".
func (b recordedBuild) what() string {
	switch {
	case len(b.Services) > 0:
		return "the image of " + strings.Join(b.Services, ", ")
	case b.Role == roleRuntime:
		return "the Agent runtime image"
	}
	return "the " + b.Role + " image"
}

// recordImages adds the control plane's images to its record.
func (r *run) recordImages(imgs ...state.ControlPlaneImage) error {
	return r.state.Update(func(s *state.State) { s.ControlPlane.Images = append(s.ControlPlane.Images, imgs...) })
}

// copyKeyStep is the step that copies the bootstrap key out, by the profile's own means
// (copyOut verifies it against the live Installation before writing it), and then, the same for
// every profile: remembers a --key-output file for the rollback, reads the key back for the
// calls after it and records where it is, never the key.
func copyKeyStep(describe func(*Plan) Description, copyOut func(context.Context, *run) (controlplane.InstalledKey, error)) Step {
	return Step{Name: "Copy and verify the bootstrap service key", Describe: describe, Run: func(ctx context.Context, r *run, _ progress.Reporter) error {
		installed, err := copyOut(ctx, r)
		if err != nil {
			return err
		}
		r.oce.keyPath, r.oce.installationID = installed.Path, installed.InstallationID
		if !installed.Owned {
			r.oce.keyWritten = installed.Path
		}
		data, err := os.ReadFile(installed.Path)
		if err != nil {
			return fmt.Errorf("read back the written service key %s: %w", installed.Path, err)
		}
		if r.oce.key, err = controlplane.ParseServiceKey(data); err != nil {
			return err
		}
		return r.state.Update(func(s *state.State) {
			s.ControlPlane.KeyPath, s.ControlPlane.KeyOwned, s.ControlPlane.InstallationID = installed.Path, installed.Owned, installed.InstallationID
		})
	}}
}

// namespaceWaitStep is the step that waits for the bootstrap Namespace: exactly one Kubernetes
// namespace carrying the OCC Namespace label, then the API reporting it ready.
func namespaceWaitStep(api oceAPI) Step {
	return Step{Name: "Wait for the bootstrap Namespace to be ready", Describe: describeNamespaceWait, Run: func(ctx context.Context, r *run, rep progress.Reporter) error {
		ctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
		defer cancel()
		ns, err := controlplane.WaitBootstrapNamespace(ctx, controlplane.NamespaceWaitOptions{
			Kubernetes: r.conn.Kube, APIURL: api.url, Key: r.oce.key, Client: api.httpClient(r),
		})
		if err != nil {
			return err
		}
		rep.Note(fmt.Sprintf("Namespace %s is ready as Kubernetes namespace %s", ns.ID, ns.KubernetesName))
		r.oce.namespace = ns
		return nil
	}}
}

func describeNamespaceWait(p *Plan) Description {
	return note(fmt.Sprintf("nothing created; waits for exactly one Kubernetes namespace labelled %s (annotated with the same ID), then polls GET /namespaces/<id> until it is ready, up to %s", controlplane.NamespaceLabel, p.StartupTimeout))
}

// removeWrittenKey is the control plane's rollback: it removes a key this failed run wrote at
// --key-output.
func removeWrittenKey(r *run) error {
	if r.oce.keyWritten == "" {
		return nil
	}
	if err := os.Remove(r.oce.keyWritten); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove copied service key: %w", err)
	}
	r.oce.keyWritten = ""
	return nil
}
