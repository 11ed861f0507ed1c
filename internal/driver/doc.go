// Package driver is the SandboxDriver contract shared by occ's Compute side and every Sandbox
// driver (today only the bundled OpenShell driver in package openshell).
//
// The flow, in the order Compute calls it:
//
//  1. Admission: ConfigureAgent transforms the Agent's native configuration for the resolved
//     Harness before OCC validates and freezes the revision. It may not change the Harness.
//  2. Namespace preparation: after Compute has applied baseline isolation (quota, LimitRange,
//     default-deny NetworkPolicies) it calls EnsureNamespace with a NamespaceContext.
//  3. Credential attachment: for revisions that bind credential sources, Compute asks the
//     paired CredentialGateway (an optional interface) to AttachForRevision and copies the
//     returned attachments into HarnessWorkloadRequirements.CredentialAttachments.
//  4. Provisioning: ProvisionHarness creates the dedicated Harness from the immutable Revision
//     and the prepared HarnessWorkloadRequirements and returns a stable SandboxResourceRef.
//     Compute verifies the ref belongs to the revision, waits for the revision's Harness Pod,
//     then gates activation on AttachmentStatus (see EvaluateAttachments).
//  5. Cleanup: revision shutdown calls Cleanup with the revision; Namespace deletion calls it
//     without one, and Compute deletes the Kubernetes namespace only if that succeeds.
//
// Every method must be safe to repeat, must adopt external objects only on exact ownership,
// and must fail closed (return an error before any mutation) when it cannot provide the
// requested containment or preserve the approved identity. Failures that the seeds name carry a
// stable code: see Error and the Code constants.
package driver
