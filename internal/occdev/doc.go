// Package occdev is the flow of `occ dev up | down | status | reload`: the named steps, the runner that
// runs them (some in lanes side by side), the rollback, the Plan that resolves and checks every
// option before anything happens, and the dry run. It knows the order of things and nothing
// about how each is done: every step hands its own inputs to a layer below.
//
// # Layers
//
//	occdev/            the flow: Step, runner, rollback, Plan, Up, Down, PlanUp; GetStatus and
//	                   List, which hand observe/ the registered parts' sections; Reload and
//	                   PlanReload, which hand reload/ the registered profiles and providers
//	occdev/reload/     `occ dev reload`: repeats the builds `up` recorded (profile/oce), imports
//	                   and verifies the changed images and rolls the OCE control plane onto them
//	                   through its profile's reload steps, on a run and step list of its own
//	occdev/recorded/   the connections to what a state records, and Remove, the class-by-class
//	                   removal `down` and the rollback run
//	occdev/observe/    reads a recorded environment and changes nothing: GetStatus (`status`)
//	                   and List (`list`), Logs over its services, the workload states `status`
//	                   shows, the debug bundle (Diagnose, and FailureBundle for a failed up,
//	                   reload or down)
//	occdev/step/       the one Step type: a named stage or a group of lanes, the runner that
//	                   reports each step, and the dry run's Description of what a step touches
//	occdev/option/     the one error for a bad setting, and Setting, how a part declares one
//	occdev/cluster/    layer 1: the cluster Provider interface (Request in, Access out);
//	                   cluster/k3d is the disposable k3d cluster (the default),
//	                   cluster/existing a kubeconfig context the user already has
//	occdev/engine/     the engine seam: Engine, a container engine in occ's own verbs and types
//	                   (images by digest and identity, save and load, exec with input, one-shot
//	                   containers, list, inspect and remove by label), Identity, what an engine
//	                   is, and the kinds of engine occ drives, one Registration each (Docker,
//	                   Podman): name, version component, API wrapper and the answers the flow
//	                   reads instead of asking which engine it drives
//	occdev/engine/locate/ finds the engine (--engine auto or a registered kind) where each one's
//	                   CLI would, and its Endpoint: one unix-socket address for every engine
//	occdev/docker/     connects to the engine at a located or recorded Endpoint only, and
//	                   implements engine.Engine over the Docker API (Engine.Verbs); the Docker
//	                   client itself (Engine.API, behind its kind's wrapper in docker/engineapi)
//	                   serves Verbs only; the k3d library and the `docker compose` plugin
//	                   reach the Endpoint with clients of their own
//	occdev/images/     pinned images pulled by digest, imported, verified in the node, all
//	                   through engine.Engine
//	occdev/platform/   layer 2: the sandbox platform's manifests (Agent Sandbox, the routing
//	                   controllers), the Gateway chart install and its render check, the
//	                   readiness waits, the Gateway Health check, the Installation writer
//	occdev/profile/    layer 3's contract (the flow never asks which profile it drives);
//	                   profile/oce what every OCE profile shares (checkout, builds, selected
//	                   images, the bootstrap key); profile/composeprofile and
//	                   profile/kubeprofile the two profiles
//	occdev/controlplane/ what the profiles run: the checkout's Dockerfiles and the BuildKit
//	                   build, the selected images' check, the key and the API waits;
//	                   controlplane/compose the Compose project, controlplane/kubernetes the
//	                   control plane inside the cluster
//	occdev/kubeobj/    the recorded cluster's client configuration; recorded Kubernetes objects:
//	                   ensure, adopt on exact ownership, remove with a UID precondition;
//	                   ownership labels; the Kubernetes Remover
//	occdev/helmrelease/ Helm releases through the Helm SDK, and their Remover
//	occdev/podlogs/    the container logs of a workload's Pods through pods/log, followed
//	occdev/diagnose/   the debug bundle's entries, each through one redaction
//	occdev/state/      the private record (state.json): typed records, Recorder, the record
//	                   kinds with their removers and order of removal
//	occdev/pins, artifacts, charts  the pinned artifacts, their verified download, the charts;
//	                   pins/online checks pins against the registries, pinbundle writes and
//	                   reads the offline bundle of a pin set
//	occdev/occdevtest/ test only: isolated `occ dev up` environments on the shared test bed
//
// # The step list
//
// upSteps returns the whole flow as one list of named steps (kind's create.go model): reading
// it tells the order of everything `up` does. A step is a value with a Name, a Describe (for
// the dry run, no I/O) and a Run that calls one layer function with inputs taken from the
// shared run. A group made with concurrently(name, lane(...), lane(...)) runs its lanes side by
// side; the first lane to fail cancels the others and the group returns only once all have
// stopped, so the rollback never races a step that is still creating something. Lanes must be
// independent and write disjoint fields of run, except that a step may wait on a readiness a
// lane of its group or of an enclosing one sets (waiting, setting: the image lanes wait for the
// cluster before importing, the platform lane for the cluster and the artifacts, the Gateway
// install for its images); a lane may hold a group of its own (the k3d cluster is created while
// the OpenShell images are pulled and imported and the platform installed, beside the artifacts
// lane). A lane that waits comes after the lanes it waits on, so a Sequential run ends.
//
// The cluster lane depends on the provider (clusterLane): an existing cluster is connected to,
// and the platform's steps (platformSteps) follow the group in turn. For k3d the pinned node and
// tools images are made present, then one group creates the cluster while the OpenShell images
// are pulled one after another (the largest, the Sandbox image, first), each imported into the
// node once both its pull and the node are there and verified by its own lane; an import lane
// checks the cluster's own images and imports and verifies the control plane's, and the platform
// lane, once the cluster and the artifacts are there, applies the objects that need only the API
// and installs the Gateway as soon as the images the chart's own objects start (its render check
// found them: the Gateway's image) are verified, so the Gateway starts while the images it only
// names for Sandboxes are still being imported. The Installation is written after the group, once every image is verified.
//
// # Control-plane profiles
//
// Layers 1 and 2 (the cluster, the sandbox platform) are the same for every control plane. A
// profile (layer 3) is a package behind the contract of package profile, registered by one line
// in controlPlanes (profile.go) and planned at plan time through its Plan(profile.Input), the
// same road for every profile: the Compose profile in profile/composeprofile, the
// Kubernetes-only profile in profile/kubeprofile. Input carries what a profile plans from (the
// shared OCE options, its own settings from UpOptions.Settings, the pins, the engine). A profile
// with settings of its own declares them (profile.Configurable: option.Setting rows bound to a
// fresh options value), and the CLI binds them from UpOptions.ProfileSettings like its own; the
// profile refuses what it does not take itself and documents its own plan (profile.Documented:
// the plan document's "oce" and its lines of the dry run's table). It adds live
// checks to the preflight, steps before the cluster exists (the Compose project's data
// services, whose network the k3d cluster joins), settings of the k3d cluster, images of its own to import
// and verify with the OpenShell images, its part of the Installation, its own steps after the platform,
// what its rollback removes outside the records, and its part of the summary. The runner,
// rollback, `down` and the dry run need no change for a new profile; a kind of record of its
// own registers itself with its remover (state.Register) in the package that creates it. Both profiles find the OCE checkout and decide the selected images
// and the key's destination the same way (package profile/oce), and share the control-plane layer's build,
// selection check, key verification and readiness waits.
//
// # Progress
//
// Every step reports progress.Events to UpOptions.Progress: a begin, notes (a message, or
// bytes transferred, through the progress.Reporter the step is handed) and an end with its own
// elapsed time and error. Steps in lanes carry the lane's name. The CLI renders the same
// contract for `occ sandbox`.
//
// # Adding a cluster provider
//
// Implement cluster.Provider in its own package under cluster/, export its cluster.Registration
// (the settings it declares of its own as option.Setting rows bound to a fresh options value,
// those of them the user set, the rule that checks them, refuses the other providers' and
// decides its plan, and how to open it), and add that to providers(). The CLI binds the declared
// settings from UpOptions.ProviderSettings like its own, UpOptions.ClusterSettings carries their
// values opaquely by provider name, and the plan carries the provider's decided settings
// opaquely and hands them back as cluster.Request.Settings. The provider sees only a
// cluster.Request (names, the state's kubeconfig paths, pins, owner, Recorder, a progress
// Reporter, what the control plane needs of the cluster as cluster.Needs, its settings) and
// returns a cluster.Access; it records what it creates through the Recorder
// before creating it. Check (local, used by the dry run) and Preflight (live, before any
// download) run before anything is created. A provider whose cluster runs only images occ
// imports implements cluster.Importer, and the flow gives it the image lanes; a failed Ensure
// that leaves a record `down` must check again returns a cluster.KeptError. The plan holds only
// values: each run opens its provider from providers() and closes it at the end.
//
// # Adding an engine kind
//
// An engine that speaks the Docker API is one Registration line in engine/kinds.go (its name,
// the GET /version component that identifies it, the answers the flow reads of it), and a file
// in docker/engineapi only when it needs a wrapper over the Docker client for its quirks. The
// locator recognises it, the state records it, every step reads its registration, and occ's
// own image and exec logic drives it through engine.Engine, which docker implements over the
// Docker API for every such kind. An engine that does not speak the Docker API would be a
// second implementation of engine.Engine; the k3d cluster, the Compose profile and the image
// build, which hand the Docker client to libraries, could not run on it.
//
// # Adding a fact to status
//
// What `occ dev status` reads from a reachable cluster itself is cluster.Facts: a typed field,
// read by ReadFacts and printed by PrintStatus in cluster/facts.go, which is the only file a new
// fact changes (the status document carries the facts whole; `list` asks Degraded).
//
// # Adding a recorded type and its remover
//
// Every record carries a state.Type. To record a new kind of thing, the layer that creates it
// defines the Type and its state.Kind and registers it with state.Register from its init
// function: the fields its records carry, their rules, how messages name them, its place in the
// order of removal (state.Order), and its Remover (Remove only what is still exactly this
// state's; Inspect never fails, reporting Unknown with the cause), built over the recorded
// connections (state.Connections, which the layers share by keys of their own), for example
//
//	state.Register(state.Kind{Type: TypeCluster, ..., Order: state.TheCluster,
//		Remover: func(c *state.Connections) state.Remover {
//			return Remover(c.State().Cluster, docker.RecordedEngine(c))
//		}})
//
// Neither the state package nor this one changes: `down`, the rollback and `status` handle the
// new kind as they are; a record whose type has no remover is kept, never skipped.
package occdev
