package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/release"

	"github.com/openclaw/occ/internal/interrupt"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/diagnose"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
)

// DiagnoseOptions are the settings of `occ dev diagnose`.
type DiagnoseOptions struct {
	// StateDir is the state directory of the environment (--state-dir,
	// OCC_DEVELOPMENT_STATE_DIRECTORY).
	StateDir string
	// Environment names the environment (--name, OCC_DEVELOPMENT_ENVIRONMENT); empty is the
	// default one.
	Environment string
	// Output is the archive to write (--archive; --output is the format of what occ prints); empty writes occ-diagnose-<UTC time>.tar.gz in
	// the working directory, as `kind export logs` writes beside the user: the state directory
	// goes with `down`. An existing file is refused, never replaced.
	Output string
	// Version is occ's version as `occ version` prints it, written into the bundle.
	Version string
}

// DiagnoseResult is what `occ dev diagnose` reports.
type DiagnoseResult struct {
	// Path is the archive written.
	Path           string `json:"path"`
	StateDirectory string `json:"stateDirectory"`
}

// bundleTimeout bounds the collection of a failed run's bundle: it runs before the rollback,
// which must not wait long for it.
const bundleTimeout = 20 * time.Second

// bundleStamp is the UTC time in a bundle's file name.
const bundleStamp = "20060102T150405Z"

// Diagnose writes the debug bundle of the environment recorded in the state directory: occ's
// version, the recorded state, the engine, the cluster's Events, Pod statuses and container
// logs, the Helm releases' status and the Compose services' states and logs, everything
// redacted. What cannot be collected is listed with its cause in the bundle's summary and never
// fails the command; only a missing environment or an unwritable archive does.
func Diagnose(ctx context.Context, o DiagnoseOptions) (*DiagnoseResult, error) {
	loc, err := state.Locate(o.StateDir, o.Environment)
	if err != nil {
		return nil, err
	}
	dir := loc.Dir
	st, err := loc.Read()
	if errors.Is(err, state.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s: nothing to diagnose; name the state directory of the environment with --state-dir or %s (a failed occ dev up writes its own bundle)", ErrNoEnvironment, dir, state.EnvDirectory)
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := o.Output
	if out == "" {
		out = "occ-diagnose-" + now.UTC().Format(bundleStamp) + ".tar.gz"
	}
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	b, err := diagnose.Create(out, now)
	if errors.Is(err, diagnose.ErrExists) {
		return nil, &option.Error{Option: "--archive", Value: out, Rule: "names a file that exists; occ never replaces a file with a debug bundle", Fix: "name a file that does not exist with --archive, or move the existing one away"}
	}
	if err != nil {
		return nil, err
	}
	rec := recorded.Connect(st)
	defer rec.Close()
	collectBundle(ctx, b, BundleInput{Dir: dir, State: st, Env: rec, Version: o.Version})
	if err := b.Close(fmt.Sprintf("occ dev diagnose: the development environment recorded in %s (profile %s), collected on request.", dir, st.Profile)); err != nil {
		return nil, err
	}
	return &DiagnoseResult{Path: out, StateDirectory: dir}, nil
}

// BundleInput is what a bundle is collected from: the recorded environment, and for a failed
// run its plan, failure and step timeline.
type BundleInput struct {
	// Dir is the state directory.
	Dir   string
	State state.State
	// Env is the connections to what State records; nil makes FailureBundle connect (and close)
	// its own.
	Env     *recorded.Env
	Version string
	// Plan is the run's resolved plan, written as plan.json; nil when the run resolved none.
	Plan     any
	Cause    error
	Timeline *diagnose.Timeline
	// Log is what the run logged, for a run without progress steps (down's removals).
	Log []byte
}

// collectBundle writes every entry it can; what it cannot goes into the summary with its cause.
// The values that must never appear are learned first (the recorded key and password files, the
// Compose services' credentials, the Secrets of the namespaces collected), before any entry is
// written.
func collectBundle(ctx context.Context, b *diagnose.Bundle, in BundleInput) {
	if cp := in.State.ControlPlane; cp != nil && cp.KeyPath != "" {
		b.SecretFile(cp.KeyPath)
	}
	b.SecretFile(filepath.Join(in.Dir, kubernetes.PasswordFileName))
	// The Compose services' credentials are the model's (the checkout's development passwords,
	// the user's own keys); a project whose model cannot be read has its logs left out, since
	// they could show any of them.
	var composeErr error
	if cp := in.State.ControlPlane; cp != nil && cp.Compose != nil {
		var values []string
		values, composeErr = compose.SnapshotSecrets(ctx, compose.RecordedSnapshot(*cp.Compose))
		b.Secret(values...)
	}
	var conn *kubeobj.Conn
	var connErr error
	if in.State.Cluster.Kubeconfig == "" {
		connErr = errors.New("no cluster is recorded: occ dev up stopped before connecting to one")
	} else {
		conn, connErr = in.Env.Kube(ctx)
	}
	namespaces := bundleNamespaces(in.State)
	withLogs := false
	if conn != nil {
		withLogs = diagnose.ClusterSecrets(ctx, b, conn.Kube, namespaces)
	}

	addRunEntries(b, in)
	collectEngine(ctx, b, in, composeErr)
	if conn == nil {
		b.Missing("kubernetes", connErr)
		return
	}
	diagnose.Cluster(ctx, b, conn.Kube, namespaces, withLogs)
	collectReleases(ctx, b, in.State)
}

// addRunEntries adds what occ itself knows of the run: its version, the recorded state, and for
// a failed run its failure, step timeline, log and plan.
func addRunEntries(b *diagnose.Bundle, in BundleInput) {
	b.Add("occ-version.txt", []byte(in.Version+"\n"))
	if data, err := os.ReadFile(filepath.Join(in.Dir, state.FileName)); err != nil {
		b.Missing(state.FileName, err)
	} else {
		b.Add(state.FileName, data)
	}
	if in.Cause != nil {
		b.Add("error.txt", []byte(in.Cause.Error()+"\n"))
	}
	if in.Timeline != nil {
		b.Add("timeline.txt", in.Timeline.Text())
	}
	if in.Log != nil {
		b.Add("log.txt", in.Log)
	}
	if in.Plan != nil {
		if data, err := json.MarshalIndent(in.Plan, "", "  "); err != nil {
			b.Missing("plan.json", err)
		} else {
			b.Add("plan.json", append(data, '\n'))
		}
	} else {
		b.Missing("plan.json", errors.New("the settings are known only to the occ dev up that resolved them; state.json holds what it decided"))
	}
}

// collectEngine adds the recorded engine and, for a Compose control plane, its services' states
// and logs, unless their credentials are unknown (composeErr says why).
func collectEngine(ctx context.Context, b *diagnose.Bundle, in BundleInput, composeErr error) {
	if in.State.Engine == nil || in.State.Engine.Endpoint == "" {
		b.Missing("engine.yaml", errors.New("no container engine is recorded (the cluster is an existing one)"))
		return
	}
	eng, err := in.Env.Engine(ctx)
	if err != nil {
		b.Missing("engine.yaml", err)
		return
	}
	diagnose.Engine(ctx, b, eng)
	if cp := in.State.ControlPlane; cp != nil && cp.Compose != nil {
		if composeErr != nil {
			b.Missing("compose", fmt.Errorf("the services' credentials are unknown, so their logs could show them: %w", composeErr))
		} else {
			diagnose.Compose(ctx, b, compose.Stack{Project: cp.Compose.Project, Engine: eng.Verbs()})
		}
	}
}

// collectReleases adds the status of every recorded Helm release.
func collectReleases(ctx context.Context, b *diagnose.Bundle, st state.State) {
	for _, o := range st.Objects {
		if o.Type != helmrelease.TypeRelease {
			continue
		}
		rel, err := releaseStatus(ctx, helmrelease.Release{Access: st.Cluster, Namespace: o.Namespace, Name: o.Name})
		if err != nil {
			b.Missing("helm/"+o.Namespace+"/"+o.Name+".yaml", err)
			continue
		}
		diagnose.HelmRelease(b, o.Namespace, o.Name, rel)
	}
}

// releaseStatus is helmrelease.Status bounded by ctx: Helm's client takes no context, so a
// cluster that stops answering is left behind instead of holding the bundle.
func releaseStatus(ctx context.Context, r helmrelease.Release) (*release.Release, error) {
	type result struct {
		rel *release.Release
		err error
	}
	done := make(chan result, 1)
	go func() {
		rel, err := helmrelease.Status(r)
		done <- result{rel, err}
	}()
	select {
	case res := <-done:
		return res.rel, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("helm status %s in namespace %s: %w", r.Name, r.Namespace, ctx.Err())
	}
}

// bundleNamespaces are the namespaces whose Events, Pods and logs a bundle holds: all of them
// (nil) in a cluster occ created; in a cluster occ only used, the namespaces of the environment
// (the platform namespace, the recorded Namespaces and the namespaces of recorded objects), so a
// bundle never carries the logs of workloads occ has nothing to do with.
func bundleNamespaces(st state.State) []string {
	if slices.ContainsFunc(st.Objects, func(o state.Object) bool { return state.OrderOf(o.Type) == state.TheCluster }) {
		return nil
	}
	namespaces := []string{}
	add := func(ns string) {
		if ns != "" && !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	add(st.PlatformNamespace)
	for _, o := range st.Objects {
		add(o.Namespace)
		if o.Type == kubeobj.TypeObject && o.Kind == "Namespace" {
			add(o.Name)
		}
	}
	slices.Sort(namespaces)
	return namespaces
}

// FailedRun is a failed up, reload or down as its debug bundle tells it.
type FailedRun struct {
	BundleInput
	// Command is the occ dev command that failed (up, reload, down), for the bundle's summary.
	Command string
	// Collected says when the bundle was collected, relative to what the failure still does.
	Collected string
	// Off is the command's --no-diagnose.
	Off bool
}

// FailureBundle writes the bundle of a failed up, reload or down into the state directory's
// parent (the directory may go with a rollback or a later down, and a run's working directory
// may be anywhere), and returns the line that ends the run's error: where the bundle is, or why
// there is none. Up calls it before its rollback removes what the bundle shows. It runs on its
// own bounded context under the abort context, so the Ctrl-C that ended the run does not skip
// it and a second one does; it never changes the failure.
func FailureBundle(ctx context.Context, f FailedRun) string {
	// A run the user stopped did not fail: they get their terminal back without a bundle.
	if f.Off || (ctx.Err() != nil && errors.Is(f.Cause, context.Canceled)) {
		return ""
	}
	abort := interrupt.AbortContext(ctx)
	if abort.Err() != nil {
		return "no debug bundle: skipped after a second interrupt"
	}
	ctx, cancel := context.WithTimeout(abort, bundleTimeout)
	defer cancel()
	now := time.Now()
	base := filepath.Join(filepath.Dir(f.Dir), filepath.Base(f.Dir)+"-diagnose-"+now.UTC().Format(bundleStamp))
	var b *diagnose.Bundle
	var err error
	for i := 1; i <= 9; i++ {
		name := base + ".tar.gz"
		if i > 1 {
			name = fmt.Sprintf("%s-%d.tar.gz", base, i)
		}
		if b, err = diagnose.Create(name, now); !errors.Is(err, diagnose.ErrExists) {
			break
		}
	}
	if err != nil {
		return "no debug bundle: " + err.Error()
	}
	if f.Env == nil {
		f.Env = recorded.Connect(f.State)
		defer f.Env.Close()
	}
	collectBundle(ctx, b, f.BundleInput)
	first, _, _ := strings.Cut(f.Cause.Error(), "\n")
	if err := b.Close(fmt.Sprintf("occ dev %s failed, for the development environment recorded in %s (profile %s): %s\n%s", f.Command, f.Dir, f.State.Profile, first, f.Collected)); err != nil {
		return "no debug bundle: " + err.Error()
	}
	return "debug bundle: " + b.Path()
}
