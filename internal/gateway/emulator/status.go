package emulator

import (
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of every structured gateway error.
const ErrorDomain = "openshell.nvidia.com"

// ErrorInfo reasons the contract lists.
const (
	ReasonInvalidArgument          = "INVALID_ARGUMENT"
	ReasonResourceVersionConflict  = "RESOURCE_VERSION_CONFLICT"
	ReasonRequestIDPayloadMismatch = "REQUEST_ID_PAYLOAD_MISMATCH"
	ReasonRequestOutcomeUncertain  = "REQUEST_OUTCOME_UNCERTAIN"
	ReasonRequestReplayUnavailable = "REQUEST_REPLAY_UNAVAILABLE"
	ReasonGatewayNotReady          = "GATEWAY_NOT_READY"
)

// Messages the gateway's request_id admission sends, verbatim. Clients must not parse them; tests
// compare them so the emulator stays faithful.
const (
	MsgRequestIDInvalid         = "must be a nonzero hyphenated UUID (36 characters)"
	MsgRequestIDPayloadMismatch = "request_id was already used with a different payload"
	MsgRequestOutcomeUncertain  = "request is admitted but has no confirmed replayable success; reconcile effects before starting a new request"
	MsgRequestReplayUnavailable = "the original scope, protected payload, or result is no longer replayable; this request was not executed again"
	MsgReplayKeyUnavailable     = "request_id on this method requires readable, stable gateway JWT or TLS private key material; no work was started by this call"
	// MsgAdmissionLimitPrefix starts the admission-limit message; clients match this prefix.
	MsgAdmissionLimitPrefix = "caller has reached the durable mutation admission limit"
)

// admissionLimitMessage is the RESOURCE_EXHAUSTED text for a caller holding limit admissions.
// The upstream sentence is followed by the limit in the words the driver's refusal quotes
// ("limit of 1000 durable request admissions"), so an operator reading the raw error sees the
// number.
func admissionLimitMessage(limit int) string {
	return fmt.Sprintf("%s; unresolved requests require reconciliation (limit of %d durable request admissions)", MsgAdmissionLimitPrefix, limit)
}

func errorInfo(reason string, metadata map[string]string) *errdetails.ErrorInfo {
	return &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: metadata}
}

// invalidArgument is the gateway's field-validation error: BadRequest naming the field plus
// ErrorInfo INVALID_ARGUMENT.
func invalidArgument(field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	st := status.New(codes.InvalidArgument, msg)
	st, err := st.WithDetails(
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}}},
		errorInfo(ReasonInvalidArgument, nil),
	)
	if err != nil {
		return status.Error(codes.Internal, "attach error details: "+err.Error())
	}
	return st.Err()
}

// preconditionReason is a stable FAILED_PRECONDITION carrying ErrorInfo{reason} and no metadata.
func preconditionReason(reason, msg string) error {
	st, err := status.New(codes.FailedPrecondition, msg).WithDetails(errorInfo(reason, nil))
	if err != nil {
		return status.Error(codes.Internal, "attach error details: "+err.Error())
	}
	return st.Err()
}

// versionConflict is the CAS-conflict error: ABORTED with RESOURCE_VERSION_CONFLICT, recovery
// REFRESH_STATE and the current version, and no RetryInfo.
func versionConflict(op string, current uint64) error {
	msg := fmt.Sprintf("%s failed due to concurrent modification (current resource_version: %d)", op, current)
	st, err := status.New(codes.Aborted, msg).WithDetails(errorInfo(ReasonResourceVersionConflict, map[string]string{
		"recovery":                 "REFRESH_STATE",
		"current_resource_version": fmt.Sprint(current),
	}))
	if err != nil {
		return status.Error(codes.Internal, "attach error details: "+err.Error())
	}
	return st.Err()
}

// unavailable is the transient error: ErrorInfo{reason} plus RetryInfo.
func unavailable(reason, msg string, retry time.Duration) error {
	st, err := status.New(codes.Unavailable, msg).WithDetails(errorInfo(reason, nil), &errdetails.RetryInfo{RetryDelay: durationpb.New(retry)})
	if err != nil {
		return status.Error(codes.Internal, "attach error details: "+err.Error())
	}
	return st.Err()
}

func notFound(format string, args ...any) error {
	return status.Errorf(codes.NotFound, format, args...)
}

func alreadyExists(format string, args ...any) error {
	return status.Errorf(codes.AlreadyExists, format, args...)
}

func failedPrecondition(format string, args ...any) error {
	return status.Errorf(codes.FailedPrecondition, format, args...)
}
