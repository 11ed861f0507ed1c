package emulator

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// ReplayWindow is how long a recorded success replays before the same request_id is admitted
// as a new request again.
const ReplayWindow = 24 * time.Hour

// ReplayedHeader is the response header a replayed success carries, with the value "true".
const ReplayedHeader = "openshell-replayed"

// An admission is keyed like upstream's: caller identity, method, workspace scope, request_id.
type admissionKey struct{ caller, method, scope, requestID string }

type admissionState int

const (
	admissionInFlight admissionState = iota
	admissionFailed
	admissionSucceeded
)

type admission struct {
	state       admissionState
	fingerprint []byte
	protected   bool
	keyGen      int
	completed   time.Time
	response    proto.Message
	target      replayTarget
}

// replayTarget is what a recorded success refers to, so a replay can tell whether the result is
// still the same object.
type replayTarget struct {
	// workspaceID is the id of the scope workspace when the request ran; a workspace deleted and
	// recreated under the same name is a changed scope.
	workspaceID     string
	objectID        string
	resourceVersion uint64
}

// mutation describes one request the admission layer guards.
type mutation[T proto.Message] struct {
	method    string
	scope     string // workspace name; "" for platform-scoped methods
	requestID string // normalized; "" skips admission
	request   proto.Message
	// protected methods fingerprint with a key derived from gateway key material (HMAC);
	// workspace methods use plain SHA-256.
	protected bool
	run       func() (T, replayTarget, error)
	// replay rebuilds the response of a recorded success, or returns errReplayUnavailable.
	replay func(*admission) (T, error)
}

func errReplayUnavailable() error {
	return preconditionReason(ReasonRequestReplayUnavailable, MsgRequestReplayUnavailable)
}

// admit runs m through durable request admission. The caller holds s.mu.
func admit[T proto.Message](ctx context.Context, s *Server, m mutation[T]) (T, error) {
	var zero T
	if m.requestID == "" {
		resp, _, err := m.run()
		return resp, err
	}
	if m.protected && s.opts.NoReplayKeyMaterial {
		return zero, preconditionReason(ReasonRequestReplayUnavailable, MsgReplayKeyUnavailable)
	}
	st := s.st
	key := admissionKey{caller: callerOf(ctx), method: m.method, scope: m.scope, requestID: m.requestID}
	fp := fingerprint(m.request, m.protected, st.keyGen)
	now := s.now()

	if rec, ok := st.admissions[key]; ok {
		if rec.state == admissionSucceeded && !now.Before(rec.completed.Add(ReplayWindow)) {
			// An expired success is deleted when it is next looked up, and the request is
			// admitted (and executed) as a new one.
			delete(st.admissions, key)
		} else {
			return replayAdmission(ctx, s, m, rec, fp)
		}
	}

	if held := st.admissionsHeld(key.caller, now, false); held >= s.opts.AdmissionLimit {
		if held = st.admissionsHeld(key.caller, now, true); held >= s.opts.AdmissionLimit {
			return zero, status.Error(codes.ResourceExhausted, admissionLimitMessage(s.opts.AdmissionLimit))
		}
	}
	rec := &admission{state: admissionInFlight, fingerprint: fp, protected: m.protected, keyGen: st.keyGen}
	st.admissions[key] = rec
	resp, target, err := m.run()
	if err != nil {
		// An errored attempt stays an unresolved claim forever: nobody can tell from here
		// whether part of its effect happened.
		rec.state = admissionFailed
		return zero, err
	}
	if outcomeUnrecorded(ctx) {
		// The change is made but the claim stays in flight, as when the gateway stops before
		// recording the success.
		return resp, nil
	}
	if m.scope != "" {
		if ws := st.workspaces[m.scope]; ws != nil && target.workspaceID == "" {
			target.workspaceID = ws.meta.Id
		}
	}
	rec.state = admissionSucceeded
	rec.completed = s.now()
	rec.response = proto.Clone(resp)
	rec.target = target
	return resp, nil
}

func replayAdmission[T proto.Message](ctx context.Context, s *Server, m mutation[T], rec *admission, fp []byte) (T, error) {
	var zero T
	if rec.protected && rec.keyGen != s.st.keyGen {
		return zero, errReplayUnavailable()
	}
	if !hmac.Equal(rec.fingerprint, fp) {
		return zero, preconditionReason(ReasonRequestIDPayloadMismatch, MsgRequestIDPayloadMismatch)
	}
	if rec.state != admissionSucceeded {
		return zero, preconditionReason(ReasonRequestOutcomeUncertain, MsgRequestOutcomeUncertain)
	}
	if m.scope != "" {
		ws := s.st.workspaces[m.scope]
		if ws == nil || ws.meta.Id != rec.target.workspaceID {
			return zero, errReplayUnavailable()
		}
	}
	resp, err := m.replay(rec)
	if err != nil {
		return zero, err
	}
	if err := grpc.SetHeader(ctx, metadata.Pairs(ReplayedHeader, "true")); err != nil {
		return zero, status.Errorf(codes.Internal, "set replay header: %v", err)
	}
	markReplayed(ctx)
	return resp, nil
}

// storedResponse replays the recorded response unchanged (deletes, profiles, refresh calls).
func storedResponse[T proto.Message](rec *admission) (T, error) {
	return proto.Clone(rec.response).(T), nil
}

// admissionsHeld counts the caller's admissions that count toward the limit: unresolved claims
// and successes still inside the replay window. With prune, expired successes are deleted.
func (st *state) admissionsHeld(caller string, now time.Time, prune bool) int {
	n := 0
	for k, rec := range st.admissions {
		if k.caller != caller {
			continue
		}
		if rec.state == admissionSucceeded && !now.Before(rec.completed.Add(ReplayWindow)) {
			if prune {
				delete(st.admissions, k)
			}
			continue
		}
		n++
	}
	return n
}

// fingerprint hashes the request without its request_id. Deterministic marshaling sorts map
// keys, so map order never changes the fingerprint.
func fingerprint(req proto.Message, protected bool, keyGen int) []byte {
	m := proto.Clone(req)
	r := m.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName("request_id"); fd != nil {
		r.Clear(fd)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// Every request decoded from the wire marshals again; fall back to a value that never
		// matches so a replay is refused rather than wrongly granted.
		b = []byte(fmt.Sprintf("unmarshalable %p", m))
	}
	if !protected {
		sum := sha256.Sum256(b)
		return sum[:]
	}
	mac := hmac.New(sha256.New, []byte(fmt.Sprintf("gatewaytest replay key generation %d", keyGen)))
	mac.Write(b)
	return mac.Sum(nil)
}

// RotateReplayKey emulates a rotation of the gateway's JWT/TLS key material: every recorded
// admission of a protected method becomes unreplayable (REQUEST_REPLAY_UNAVAILABLE).
func (s *Server) RotateReplayKey() {
	s.mu.Lock()
	s.st.keyGen++
	s.mu.Unlock()
}

// Admissions reports how many admissions the emulator holds for all callers (unresolved claims
// and successes, expired ones included until they are pruned).
func (s *Server) Admissions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.st.admissions)
}
