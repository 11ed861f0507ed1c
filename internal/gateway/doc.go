// Package gateway is the client of the OpenShell gateway's gRPC API on the v0.1.x wire contract
// (service openshell.v1.OpenShell, described in api/openshell/v1).
//
// The package is the one place that knows the wire: request envelopes, workspace selectors,
// request_id admission, deletion outcomes, timestamps and error details are translated here, so
// callers work with Go values (Workspace, Sandbox, Provider, LogLine, …) and typed errors
// (*Error, IsNotFound, IsReplayRefused, IsAdmissionLimit, …). The two large nested trees that
// the driver builds and compares field by field, SandboxSpec and ProviderProfile, are passed as
// the generated messages of package openshellv1 because a second copy of them would only add a
// place for the two to drift.
//
// Transport rules (Config): an http:// or https:// origin or a bare host:port; TLS with an
// optional private root certificate; a bearer token read from its file on every call; plaintext
// or unauthenticated access only when the operator declares insecureTransport: network-policy;
// a per-call deadline of requestTimeoutMs (1000..30000, default 10000).
//
// Retries: UNAVAILABLE (which includes a connection the gateway closed or reset), a stream the
// gateway cancelled, RESOURCE_EXHAUSTED other than the durable-admission limit, and an attempt
// that ran out of its own per-call deadline are retried with exponential backoff inside the
// caller's context, never past its deadline. Only repeatable requests are retried: reads,
// DeleteSandbox, and mutations that carry a request_id. A mutation keeps one request_id across
// its retries, so a retry after a lost response is answered by the gateway's replay of the
// first success instead of running twice. This is how the first calls after the pinned
// Gateway becomes ready survive its startup defect: OpenShell v0.1.3-pre.2 drops the requests
// in flight about 10 s after it starts.
package gateway
