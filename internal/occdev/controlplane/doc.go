// Package controlplane is layer 3 of `occ dev up`, the part both control-plane profiles share:
// the OpenClaw Enterprise (OCE) source checkout it runs from (found, recognised and its commit
// read without git), the bootstrap service key (read from wherever the profile's bootstrap wrote
// it, verified against the live Installation, written privately), the API readiness poll and
// the wait for the bootstrap Namespace.
//
// Each operation is a library call with an options struct, so a `dev up` step, `dev status` and
// the tests call the same code. The Compose profile lives in controlplane/compose, the
// Kubernetes-only profile in controlplane/kubernetes.
//
// The service key is a credential for the whole Installation. It never appears in an error, a
// log line, a progress message or the state record: ServiceKey keeps it in an unexported field
// and formats as a redacted value.
package controlplane
