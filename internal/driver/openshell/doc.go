// Package openshell is the bundled OpenShell SandboxDriver, paired with the OpenShell
// Credential Gateway through the openshell Backend. One *Driver implements driver.Driver,
// driver.CredentialGateway and driver.LogReader.
//
// Offline (no gateway, no cluster): ConfigureAgent, ValidateWorkspaceSetup and
// RenderCreateSandbox, which runs every provisioning check and returns the exact first
// CreateSandbox request; MarshalRequestJSON prints it reproducibly.
//
// Online, through a Gateway (normally *gateway.Client) and Compute's Kubernetes client:
//
//   - EnsureNamespace (operator workspace mode only): label the namespace, apply the
//     workspace-chart and NetworkPolicy resources, optional readiness, Health, then create or
//     adopt the Workspace named like the namespace.
//   - ProvisionHarness: validate; for Codex ensure the Workspace's managed oce-codex-runtime
//     provider profile and the revision's runtime provider (its runtime.json and config.toml),
//     listed last in the Sandbox's providers; then create (or adopt the exact) Sandbox with the
//     revision's deterministic request IDs; returns the stable driver.SandboxResourceRef.
//   - AttachForRevision / AttachmentStatus: credential-source providers (oce-cs-…) and their
//     readiness on the Sandbox; driver.EvaluateAttachments is the activation gate.
//   - Cleanup: with a revision, DeleteSandbox by the derived name, then the revision's runtime
//     provider; without one, the owned runtime providers and managed runtime profiles, then
//     DeleteWorkspace and the configured resources in reverse order.
//   - ReadSandboxLogs: GetSandboxLogs only.
//
// Names are derived, never stored: the Workspace is the namespace name (at most 19
// characters), the Sandbox is SandboxName(prefix, revision ID), a credential provider is
// CredentialProviderName(source ID), a runtime provider is RuntimeProviderName(revision ID).
// That is what makes every operation safe to repeat and lets cleanup find what a lost response
// created.
package openshell
