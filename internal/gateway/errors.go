package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of the gateway's structured errors. Reasons
// from any other domain are ignored: they were not written by the gateway.
const ErrorDomain = "openshell.nvidia.com"

// ErrorInfo reasons the client acts on (the request_id admission outcomes, a CAS conflict, the
// admission limit), and the wording it matches and writes around them.
const (
	ReasonRequestOutcomeUncertain   = "REQUEST_OUTCOME_UNCERTAIN"
	ReasonRequestIDPayloadMismatch  = "REQUEST_ID_PAYLOAD_MISMATCH"
	ReasonRequestReplayUnavailable  = "REQUEST_REPLAY_UNAVAILABLE"
	ReasonResourceVersionConflict   = "RESOURCE_VERSION_CONFLICT"
	ReasonSandboxAdmissionLimit     = "SANDBOX_ADMISSION_LIMIT_REACHED"
	admissionLimitMessagePrefix     = "caller has reached the durable mutation admission limit"
	maxGatewayMessageBytes          = 1024
	redactedMarker                  = "[REDACTED]"
	admissionLimitExplanationFormat = "the caller holds the gateway's limit of 1000 durable request admissions (%s); " +
		"completed records expire after 24 hours and unsuccessful ones have no reset API: inspect the Gateway database before redeploying"
)

// Sentinel errors for errors.Is. Every *Error matches the ones that describe it, so callers
// write errors.Is(err, gateway.ErrNotFound) or gateway.IsNotFound(err) interchangeably.
var (
	// ErrNotFound: the named object (or its workspace) does not exist (NOT_FOUND).
	ErrNotFound = errors.New("OpenShell object not found")
	// ErrAlreadyExists: the name is taken (ALREADY_EXISTS); read the object and verify it.
	ErrAlreadyExists = errors.New("OpenShell object already exists")
	// ErrReplayRefused: the gateway refused a request_id (REQUEST_OUTCOME_UNCERTAIN,
	// REQUEST_ID_PAYLOAD_MISMATCH or REQUEST_REPLAY_UNAVAILABLE). No work was started.
	ErrReplayRefused = errors.New("OpenShell refused the request_id")
	// ErrVersionConflict: an optimistic-concurrency fence failed (ABORTED,
	// RESOURCE_VERSION_CONFLICT); refresh the object and decide again.
	ErrVersionConflict = errors.New("OpenShell resource version conflict")
	// ErrAdmissionLimit: the caller holds the gateway's 1000 durable request admissions.
	ErrAdmissionLimit = errors.New("OpenShell durable request admission limit reached")
	// ErrUnavailable: the gateway could not be used right now (unavailable, overloaded, timed
	// out, or failed internally); the operation may be retried later.
	ErrUnavailable = errors.New("OpenShell gateway unavailable")
	// ErrPermissionDenied: the caller is not authenticated or not authorized.
	ErrPermissionDenied = errors.New("OpenShell refused the caller's identity")
	// ErrFailedPrecondition: the gateway refused because of the object's state (for example
	// a Workspace that still contains resources, or one that is being deleted).
	ErrFailedPrecondition = errors.New("OpenShell precondition failed")
	// ErrInvalidResponse: the gateway answered with something the contract does not allow.
	ErrInvalidResponse = errors.New("OpenShell returned an invalid response")
	// ErrDeletionNotConfirmed: a delete was acknowledged but not confirmed complete.
	ErrDeletionNotConfirmed = errors.New("OpenShell did not confirm the deletion")
)

// Error is a refusal or failure reported by the gateway for one RPC, decoded from the gRPC
// status and its google.rpc details.
type Error struct {
	// Method is the RPC name, for example "CreateSandbox".
	Method string
	// Code is the gRPC status code.
	Code codes.Code
	// Reason is the ErrorInfo reason in ErrorDomain, or ReasonSandboxAdmissionLimit for the
	// admission limit, which the gateway reports without ErrorInfo. Empty when absent.
	Reason string
	// Metadata is the ErrorInfo metadata (for example current_resource_version).
	Metadata map[string]string
	// Message is the gateway's status message, bounded in length, with every credential value
	// the request carried replaced by [REDACTED].
	Message string
	// RetryDelay is the RetryInfo delay the gateway asked for, if any.
	RetryDelay time.Duration
	// Attempts counts the calls made, retries included.
	Attempts int
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.transientCode() && e.Code != codes.ResourceExhausted {
		fmt.Fprintf(&b, "OpenShell gateway unavailable for %s", e.Method)
		if e.Attempts > 1 {
			fmt.Fprintf(&b, " after %d attempts", e.Attempts)
		}
	} else {
		fmt.Fprintf(&b, "OpenShell refused %s", e.Method)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	fmt.Fprintf(&b, " (%s", codeName(e.Code))
	if e.Reason != "" && e.Reason != ReasonSandboxAdmissionLimit {
		fmt.Fprintf(&b, ", %s", e.Reason)
	}
	b.WriteString(")")
	if e.Reason == ReasonSandboxAdmissionLimit {
		b.WriteString(": ")
		fmt.Fprintf(&b, admissionLimitExplanationFormat, ReasonSandboxAdmissionLimit)
	}
	return b.String()
}

// Is lets errors.Is match the sentinel errors that describe e.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Code == codes.NotFound
	case ErrAlreadyExists:
		return e.Code == codes.AlreadyExists
	case ErrReplayRefused:
		return e.ReplayRefused()
	case ErrVersionConflict:
		return e.Code == codes.Aborted && (e.Reason == "" || e.Reason == ReasonResourceVersionConflict)
	case ErrAdmissionLimit:
		return e.Reason == ReasonSandboxAdmissionLimit
	case ErrUnavailable:
		return e.transientCode() && e.Reason != ReasonSandboxAdmissionLimit
	case ErrPermissionDenied:
		return e.Code == codes.PermissionDenied || e.Code == codes.Unauthenticated
	case ErrFailedPrecondition:
		return e.Code == codes.FailedPrecondition && !e.ReplayRefused()
	}
	return false
}

// ReplayRefused reports whether the gateway refused the request_id itself. Following the
// contract, the reason counts only together with FAILED_PRECONDITION.
func (e *Error) ReplayRefused() bool {
	if e.Code != codes.FailedPrecondition {
		return false
	}
	switch e.Reason {
	case ReasonRequestOutcomeUncertain, ReasonRequestIDPayloadMismatch, ReasonRequestReplayUnavailable:
		return true
	}
	return false
}

// ErrorCode is the code a driver reports for this error: the ErrorInfo reason when there is
// one (SANDBOX_ADMISSION_LIMIT_REACHED for the admission limit), else the gRPC code name.
func (e *Error) ErrorCode() string {
	if e.Reason != "" {
		return e.Reason
	}
	return codeName(e.Code)
}

// transientCode reports the codes that describe the gateway's condition rather than the
// request: the reference client passes NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION,
// PERMISSION_DENIED, UNAUTHENTICATED and RESOURCE_EXHAUSTED through and treats every other
// failure as "dependency unavailable". INVALID_ARGUMENT and UNIMPLEMENTED are kept out too: a
// retry of the same bytes cannot succeed.
func (e *Error) transientCode() bool {
	switch e.Code {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Internal, codes.Unknown, codes.DataLoss,
		codes.Canceled, codes.ResourceExhausted:
		return true
	case codes.Aborted:
		return e.Reason != "" && e.Reason != ReasonResourceVersionConflict
	}
	return false
}

// IsNotFound reports whether err says the object is absent.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsAlreadyExists reports whether err says the name is taken.
func IsAlreadyExists(err error) bool { return errors.Is(err, ErrAlreadyExists) }

// IsReplayRefused reports whether err is a request_id refusal.
func IsReplayRefused(err error) bool { return errors.Is(err, ErrReplayRefused) }

// IsVersionConflict reports whether err is a failed resource-version fence.
func IsVersionConflict(err error) bool { return errors.Is(err, ErrVersionConflict) }

// IsAdmissionLimit reports whether err is the durable admission limit
// (SANDBOX_ADMISSION_LIMIT_REACHED). It is transient for the driver, but the client does not
// retry it: only reconciliation on the gateway frees admissions.
func IsAdmissionLimit(err error) bool { return errors.Is(err, ErrAdmissionLimit) }

// IsUnavailable reports whether err means the gateway could not be used right now.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// IsPermissionDenied reports whether err is UNAUTHENTICATED or PERMISSION_DENIED.
func IsPermissionDenied(err error) bool { return errors.Is(err, ErrPermissionDenied) }

// decodeError turns an RPC error into *Error. secrets are the credential values the request
// carried; a gateway that echoes one in its message must not make us print it.
func decodeError(method string, err error, secrets []string) *Error {
	st, ok := status.FromError(err)
	if !ok {
		// Not a status: grpc-go returns statuses for every RPC failure, so this is a local
		// error (for example from the token file); it is wrapped by the caller instead.
		st = status.New(codes.Unknown, err.Error())
	}
	e := &Error{Method: method, Code: st.Code(), Message: boundMessage(scrub(st.Message(), secrets))}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() == ErrorDomain && e.Reason == "" {
				e.Reason = d.GetReason()
				if len(d.GetMetadata()) > 0 {
					e.Metadata = make(map[string]string, len(d.GetMetadata()))
					for k, v := range d.GetMetadata() {
						e.Metadata[k] = scrub(v, secrets)
					}
				}
			}
		case *errdetails.RetryInfo:
			if d.GetRetryDelay() != nil {
				e.RetryDelay = d.GetRetryDelay().AsDuration()
			}
		}
	}
	// The admission limit carries no ErrorInfo; its message prefix is the only signal, and
	// the reference client matches it the same way.
	if e.Code == codes.ResourceExhausted && strings.HasPrefix(st.Message(), admissionLimitMessagePrefix) {
		e.Reason = ReasonSandboxAdmissionLimit
	}
	return e
}

// scrub replaces every occurrence of a secret in s. Short values are skipped only when empty:
// even a one-character credential is the caller's to protect.
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redactedMarker)
		}
	}
	return s
}

func boundMessage(s string) string {
	if len(s) <= maxGatewayMessageBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxGatewayMessageBytes], "") + "…"
}

// codeName renders a gRPC code the way the gateway's documentation writes it (NOT_FOUND).
func codeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.Canceled:
		return "CANCELLED"
	case codes.Unknown:
		return "UNKNOWN"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	case codes.Aborted:
		return "ABORTED"
	case codes.OutOfRange:
		return "OUT_OF_RANGE"
	case codes.Unimplemented:
		return "UNIMPLEMENTED"
	case codes.Internal:
		return "INTERNAL"
	case codes.Unavailable:
		return "UNAVAILABLE"
	case codes.DataLoss:
		return "DATA_LOSS"
	case codes.Unauthenticated:
		return "UNAUTHENTICATED"
	}
	return c.String()
}

// ResponseError reports a response that breaks the wire contract (a missing object, a name that
// differs from the request, more log lines than asked for). It matches ErrInvalidResponse.
type ResponseError struct {
	Method  string
	Problem string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("OpenShell %s returned an invalid response: %s", e.Method, e.Problem)
}

// Is matches ErrInvalidResponse and ErrUnavailable: a gateway answering outside its contract
// is a dependency that cannot be used, and a later attempt may reach a healthy replica.
func (e *ResponseError) Is(target error) bool {
	return target == ErrInvalidResponse || target == ErrUnavailable
}

// OutcomeError reports a delete whose outcome is not a confirmed completion (ACCEPTED or
// unspecified) for an object the client does not poll. It matches ErrDeletionNotConfirmed.
type OutcomeError struct {
	Method  string
	Name    string
	Outcome DeletionOutcome
}

func (e *OutcomeError) Error() string {
	return fmt.Sprintf("OpenShell %s did not confirm deletion of %s: outcome %s; retry the delete", e.Method, e.Name, e.Outcome)
}

// Is matches ErrDeletionNotConfirmed and ErrUnavailable (the delete is worth retrying).
func (e *OutcomeError) Is(target error) bool {
	return target == ErrDeletionNotConfirmed || target == ErrUnavailable
}

// ArgumentError reports a call argument the client refuses before sending anything.
type ArgumentError struct {
	Method string
	Field  string
	Value  string
	Rule   string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("OpenShell %s %s %q: %s", e.Method, e.Field, e.Value, e.Rule)
}
