// Package compose is the Compose control-plane profile of `occ dev up`: PostgreSQL, migration,
// bootstrap, the OCE API (controller) and the Kubernetes worker run as a Compose project built
// from the OCE checkout's own compose.yaml and compose.kubernetes.yaml (and, on Podman, its
// compose.podman.yaml when it has one).
//
// The model is loaded and checked in-process with compose-go, before anything runs: the
// development network gets its bridge gateway, every volume and network must be Compose-owned
// and absent, every publication must stay on loopback, and the API URL comes from the
// controller's 3000/tcp publication. The checked model is written to the state directory as
// the project snapshot, with every "$" escaped, and every later Compose call uses only that
// snapshot, so `down` acts on exactly what `up` ran.
//
// The project itself runs through the `docker compose` CLI plugin (the one subprocess occ
// allows), invoked directly with DOCKER_HOST set to the recorded engine endpoint. Everything
// else (waiting for the one-shot jobs, service status, the worker's readiness exec, reading the
// bootstrap key, checking that nothing is left) talks to the engine through the Docker API.
//
// On Podman the same plugin runs against the Podman socket, rather than podman-compose: one
// Compose implementation renders and runs the snapshot on both engines; what it creates carries
// the same com.docker.compose.* labels, which the absence checks, the service lookups and the
// leftover sweep read (podman-compose's project label is looked for too, for a project someone
// made with it); nothing else (a Python program and its version) has to be installed; and
// Podman's Docker-compatible API serves the plugin's calls. Podman's healthchecks run from
// systemd timers, so `condition: service_healthy` needs a host with systemd.
package compose
