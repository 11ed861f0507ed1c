// Package emulator is an in-process emulator of the OpenShell gateway v0.1.x (service
// openshell.v1.OpenShell) for tests and manual use. It serves the generated gRPC service on a
// real loopback listener, so clients exercise real HTTP/2, real protobuf bytes and real status
// details, and it follows the gateway's v0.1 semantics: workspace and sandbox lifecycles, durable
// request_id admission with replay, google.rpc ErrorInfo details in the domain
// openshell.nvidia.com, provider readiness receipts, provider profiles and the per-sandbox log
// ring buffer.
//
// Given a kubernetes.Interface, the emulator backs sandboxes the way OpenShell's Kubernetes
// driver does in operator workspace mode: the Harness Pod is created in the Namespace named like
// the Workspace, a sandbox reports READY only while that Pod is Ready, and DeleteSandbox removes
// the Pod. Without a client, sandboxes live in memory only.
//
// Tests steer the emulator through methods on Server: a journal of every call (to prove that no
// mutation happened), fault injection (latency, lost responses, UNAVAILABLE, RESOURCE_EXHAUSTED,
// connections closed without an answer), provider readiness, sandbox phases, log lines and an
// injectable clock for the 24 h replay window.
//
// Behaviour of the real gateway that has not been confirmed from its source or fixtures is
// implemented as the best guess and named in a comment starting "Unconfirmed:" where it is
// decided.
package emulator
