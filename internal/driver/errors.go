package driver

import "errors"

// Code is a stable machine-readable failure code. Compute records it in deployment status, so
// values never change once published.
type Code string

// Codes the SandboxDriver contract defines.
const (
	// CodeHarnessUnsupported: the driver cannot run this Harness (wrong mode or runtime, or an
	// identity, mount or file shape it cannot preserve). Deploy another revision or driver.
	CodeHarnessUnsupported Code = "SANDBOX_HARNESS_UNSUPPORTED"
	// CodeSecretEnvironmentUnsupported: the Harness environment carries a Secret-backed or
	// malformed value the driver must not forward.
	CodeSecretEnvironmentUnsupported Code = "SANDBOX_SECRET_ENVIRONMENT_UNSUPPORTED"
	// CodeAdmissionLimitReached: the gateway holds the caller's maximum of durable request
	// admissions. Transient for completed records (they expire after 24 hours); unresolved ones
	// need an operator to reconcile the gateway database.
	CodeAdmissionLimitReached Code = "SANDBOX_ADMISSION_LIMIT_REACHED"
	// CodeRuntimeLogsSandboxNotFound: the Sandbox is absent, or the caller is not a member of its
	// Workspace (the gateway does not distinguish the two).
	CodeRuntimeLogsSandboxNotFound Code = "RUNTIME_LOGS_SANDBOX_NOT_FOUND"
	// CodeRuntimeLogsForbiddenByCluster: the gateway refused the caller's identity or scope.
	CodeRuntimeLogsForbiddenByCluster Code = "RUNTIME_LOGS_FORBIDDEN_BY_CLUSTER"
	// CodeCredentialAttachmentFailed: a credential attachment reached a terminal non-ready state
	// (failed, withheld, revoked or absent); the revision must not be activated.
	CodeCredentialAttachmentFailed Code = "SANDBOX_CREDENTIAL_ATTACHMENT_FAILED"
)

// Error is a coded driver failure. Message is the user-facing sentence (the seeds' sentences are
// reproduced verbatim, so callers can match on them); Err, when set, is the detail or underlying
// cause naming the offending value, appended in parentheses. Neither ever contains a Secret value.
type Error struct {
	Code    Code
	Message string
	// Retryable reports that the same call may succeed later without any change (for example
	// an admission limit that frees up as records expire).
	Retryable bool
	Err       error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + " (" + e.Err.Error() + ")"
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Coded builds a coded error with a fixed message.
func Coded(code Code, message string) *Error { return &Error{Code: code, Message: message} }

// CodeOf returns the code of the first *Error in err's chain, or "" when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// HasCode reports whether err carries code.
func HasCode(err error, code Code) bool { return code != "" && CodeOf(err) == code }

// IsRetryable reports whether err is a coded error marked retryable.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}
