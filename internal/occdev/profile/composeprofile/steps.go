package composeprofile

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

func (c Planned) describeSnapshot(v profile.View) step.Description {
	m := c.Compose.Model
	d := step.Describe(
		step.FileAt(filepath.Join(v.StateDir, compose.SnapshotName), compose.SnapshotMode, "the checked Compose model of project "+m.Name()+", every $ escaped; every later Compose call uses only it"),
		step.FileAt(filepath.Join(v.StateDir, SourcesFile), sourcesMode, "the sha256 of every file the model was read from, which occ dev reload compares before repeating the snapshot"))
	// The records are entries of state.json, which the state's own step names as a file.
	for _, o := range m.Records() {
		d.Creates = append(d.Creates, "record of "+o.String())
	}
	return d
}

// writeSnapshot writes the checked model into the state directory and records the control
// plane and the project's network, volumes and project, before `compose up` creates them.
func (c Planned) writeSnapshot(_ context.Context, env profile.Env, _ progress.Reporter) error {
	op, d := c.Compose, env.State()
	snap, err := op.Model.WriteSnapshot(d.Path())
	if err != nil {
		return err
	}
	if err := writeSources(d, op.Model.Sources()); err != nil {
		return err
	}
	c.run.runner = compose.Runner{Plugin: c.run.plugin, Endpoint: env.Engine().Endpoint.String(), Snapshot: snap, Redact: compose.Secrets(op.Model.Project)}
	cp := &state.ControlPlane{
		Checkout: op.Checkout, Commit: op.Commit, APIURL: op.Model.APIURL, HostPorts: op.HostPorts, Subnet: op.Subnet,
		Compose: &state.ComposeProject{Project: snap.Project, Snapshot: snap.Path, Checkout: snap.Checkout, Started: op.Model.StartedServices()},
	}
	if err := d.Update(func(s *state.State) { s.ControlPlane = cp }); err != nil {
		return fmt.Errorf("record the control plane: %w", err)
	}
	for _, o := range op.Model.Records() {
		if err := d.Record(o); err != nil {
			return fmt.Errorf("record %s: %w", o, err)
		}
	}
	return nil
}

func (c Planned) describeBuilds(profile.View) step.Description {
	op := c.Compose
	if op.SelectedImages != nil {
		return step.Note("nothing built; runs the selected controller image " + op.SelectedImages.Controller + " and imports the selected runtime image " + op.SelectedImages.Runtime + " (checked in the preflight: present locally, revision " + op.Commit + ")")
	}
	var items []step.Item
	for _, b := range op.Builds {
		items = append(items, b.Describe())
	}
	items = append(items, step.Image{Reference: controlplane.DefaultRuntimeTag, Where: step.InEngine,
		Note: "built by the engine's BuildKit from " + op.Checkout + " (" + controlplane.RuntimeDockerfile + "), the Agent runtime imported into the cluster, " + images.HeldNote})
	d := step.Describe(items...)
	d.Note = "built through the Docker engine's BuildKit API, not compose --build (whose classic-builder fallback refuses OCE's RUN --mount); the images are left in the engine for the next run's cache"
	return d
}

// buildImages builds the services' images and the Agent runtime from the checkout (or records
// the selected ones), and records them in the state.
func (c Planned) buildImages(ctx context.Context, env profile.Env, rep progress.Reporter) error {
	op := c.Compose
	if sel := op.SelectedImages; sel != nil {
		return oce.RecordImages(env.State(),
			state.ControlPlaneImage{Role: oce.RoleController, Reference: sel.Controller, Selected: true},
			state.ControlPlaneImage{Role: oce.RoleRuntime, Reference: sel.Runtime, ID: c.run.runtime.ID, Selected: true})
	}
	// Every base comes in by the digest the pull step recorded, whatever the arguments said.
	var builds []oce.RecordedBuild
	for _, b := range op.Builds {
		if pb := op.PlannedBuild(b.Role); pb != nil {
			b.Args = pb.WithResolved(c.run.bases)
		}
		builds = append(builds, oce.RecordedBuild{Role: b.Role, Services: b.Services, ContextDir: b.Context, Dockerfile: b.Dockerfile, Target: b.Target, Args: b.Args, Tag: b.Tag, Network: b.Network})
	}
	builds = append(builds, oce.RecordedBuild{Role: oce.RoleRuntime, Imported: true, ContextDir: op.Checkout, Dockerfile: controlplane.RuntimeDockerfile, Tag: controlplane.DefaultRuntimeTag,
		Args: op.PlannedBuild(oce.RoleRuntime).WithResolved(c.run.bases), Network: runtimeBuildNetwork(c.deps.BuildNetwork, op.Builds)})
	built, err := oce.BuildImages(ctx, env, builds, func(line string) { rep.Note(line) })
	if err != nil {
		return err
	}
	c.run.runtime = built[oce.RoleRuntime]
	return nil
}

// runtimeBuildNetwork is the network of the Agent runtime build's RUN steps: the seam's, else
// the build.network every Compose build of the checkout agrees on (the Agent runtime is built
// from the same checkout, on the same engine), else the engine's default.
func runtimeBuildNetwork(setting string, builds []compose.Build) string {
	if setting != "" || len(builds) == 0 {
		return setting
	}
	for _, b := range builds[1:] {
		if b.Network != builds[0].Network {
			return ""
		}
	}
	return builds[0].Network
}

func (c Planned) describeDataServices(profile.View) step.Description {
	cp := c.Compose.Compose
	data := c.Compose.Model.DataStage()
	items := []step.Item{step.EngineObject{Kind: "Compose project", Name: cp.Project,
		Note: "through the docker compose plugin: services " + strings.Join(data, ", ") + " (up --detach), then " + strings.Join(compose.JobServices, " and ") + " must exit 0"}}
	for _, n := range cp.Networks {
		items = append(items, step.EngineObject{Kind: "network", Name: n.Name, Note: fmt.Sprintf("subnet %s, gateway %s; the k3d cluster joins it", n.Subnet, n.Gateway)})
	}
	for _, v := range cp.Volumes {
		items = append(items, step.EngineObject{Kind: "volume", Name: v})
	}
	d := step.Describe(append(items, publishedPorts(cp, data)...)...)
	if k := c.in.EngineKind; k.Registration().ComposePodman {
		d.Note = "on " + k.Name() + " the exited " + strings.Join(compose.JobServices, " and ") + " containers are then disconnected from the development network: Podman lists them as members without an address, which k3d's lookup of the network it joins refuses"
	}
	return d.Waiting(compose.JobWaits(cp.Project)...)
}

// startDataServices starts postgres, migrate and bootstrap from the snapshot and waits for the
// jobs to exit 0 (a failed job's last log lines are in the error), then detaches the exited jobs
// the engine lists on the network without an address (Podman does) and records the network's
// engine ID.
func (c Planned) startDataServices(ctx context.Context, env profile.Env, _ progress.Reporter) error {
	wctx, cancel := context.WithTimeout(ctx, c.in.StartupTimeout)
	defer cancel()
	if err := compose.StartData(wctx, compose.StartOptions{Runner: c.run.runner, Stack: c.run.stack, Services: c.Compose.Model.DataStage()}); err != nil {
		return err
	}
	m := c.Compose.Model
	if err := c.run.stack.DetachExitedJobs(ctx, m.Network.Name); err != nil {
		return err
	}
	return compose.RecordIDs(ctx, env.Engine().Verbs(), env.State(), m.Records())
}

func (c Planned) describeAPIServices(profile.View) step.Description {
	cp := c.Compose.Compose
	api := c.Compose.Model.APIStage()
	d := step.Describe(append(composeServices(cp.Project, api), publishedPorts(cp, api)...)...)
	d.Note = "up --detach --no-deps, with the Installation and the container kubeconfig mounted read-only"
	return d
}

// composeServices are the services of project a step starts.
func composeServices(project string, services []string) []step.Item {
	out := make([]step.Item, 0, len(services))
	for _, s := range services {
		out = append(out, step.EngineObject{Kind: "service", Name: s, Note: "of project " + project})
	}
	return out
}

// publishedPorts are the loopback ports the plan cp publishes for services.
func publishedPorts(cp *compose.Plan, services []string) []step.Item {
	var out []step.Item
	for _, port := range cp.Ports {
		if slices.Contains(services, port.Service) {
			out = append(out, step.EngineObject{Kind: "published port", Name: port.Host, Note: "to " + port.Target + " of " + port.Service})
		}
	}
	return out
}

// startAPIServices records the API services (so `down` stops them first) and starts them.
func (c Planned) startAPIServices(ctx context.Context, env profile.Env, _ progress.Reporter) error {
	if err := env.State().Record(compose.ServicesRecord(c.Compose.Model.Name())); err != nil {
		return fmt.Errorf("record the API services: %w", err)
	}
	return compose.StartAPI(ctx, compose.StartOptions{Runner: c.run.runner, Stack: c.run.stack, Services: c.Compose.Model.APIStage()})
}

func (c Planned) describeAddedServices(profile.View) step.Description {
	m := c.Compose.Model
	d := step.Describe(append(composeServices(m.Name(), m.Added), publishedPorts(c.Compose.Compose, m.Added)...)...)
	d.Note = "up --detach --no-deps, added by the Compose options after --"
	return d
}

// startAddedServices starts what the user's Compose files add, once everything of the profile
// they can depend on runs; `down` removes them with the project.
func (c Planned) startAddedServices(ctx context.Context, _ profile.Env, _ progress.Reporter) error {
	return compose.StartAdded(ctx, compose.StartOptions{Runner: c.run.runner, Stack: c.run.stack}, c.Compose.Model.Added)
}

func (c Planned) describeReadiness(v profile.View) step.Description {
	return step.Note(fmt.Sprintf("nothing created; polls GET %s/api/auth/session for a 2xx together with the worker's readiness probe (exec), up to %s", c.Compose.Compose.APIURL, v.StartupTimeout)).
		Waiting(controlplane.SessionWait(c.Compose.Model.APIURL), compose.WorkerReadyWait(c.Compose.Model.Name()))
}

func (c Planned) waitForAPI(ctx context.Context, _ profile.Env, _ progress.Reporter) error {
	wctx, cancel := context.WithTimeout(ctx, c.in.StartupTimeout)
	defer cancel()
	return controlplane.WaitReady(wctx, controlplane.ReadinessOptions{
		APIURL: c.Compose.Model.APIURL, Checks: []controlplane.ReadinessCheck{c.run.stack.ReadinessCheck()},
	})
}

func (c Planned) describeKey(profile.View) step.Description {
	return step.Describe(step.FileAt(c.Compose.KeyDest.Path, controlplane.KeyFileMode, "O_EXCL: the bootstrap service key, read from the bootstrap volume through the engine's archive API and written only after GET /installation with it names the key's Installation"))
}

// copyKey copies the bootstrap key out of the bootstrap container through the Docker archive
// API, verifies it against the live Installation and writes it.
func (c Planned) copyKey(ctx context.Context, env profile.Env) (controlplane.InstalledKey, error) {
	op := c.Compose
	return controlplane.InstallServiceKey(ctx, controlplane.InstallKeyOptions{
		StateDir: env.State().Path(), Destination: op.KeyDest, APIURL: op.Model.APIURL, Read: c.run.stack.BootstrapKeySource(),
	})
}
