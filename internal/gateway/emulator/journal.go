package emulator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Call is one journaled RPC as the emulator answered it.
type Call struct {
	// Method is the short method name, for example "CreateSandbox".
	Method string
	// Request is a deep copy of the decoded request.
	Request proto.Message
	// Code is the status code the client received (codes.OK on success).
	Code codes.Code
	// Replayed reports a request_id replay (the response carried openshell-replayed: true).
	Replayed bool
	// Fault names the injected fault that shaped this call, if any.
	Fault FaultKind
	// Time is the emulator clock when the call arrived.
	Time time.Time
}

// mutatingMethods are the RPCs that can change gateway state on behalf of a client.
// GetSandboxProviderStatus records an OBSERVE receipt but changes nothing a client sees, so it
// counts as a read.
var mutatingMethods = map[string]bool{
	"CreateWorkspace": true, "DeleteWorkspace": true,
	"CreateSandbox": true, "DeleteSandbox": true,
	"ExposeService": true, "DeleteService": true,
	"AttachSandboxProvider": true, "DetachSandboxProvider": true,
	"CreateProvider": true, "UpdateProvider": true, "DeleteProvider": true,
	"ImportProviderProfiles": true, "UpdateProviderProfiles": true, "DeleteProviderProfile": true,
	"ConfigureProviderRefresh": true, "RotateProviderCredential": true, "DeleteProviderRefresh": true,
}

// IsMutating reports whether method (a short name such as "CreateSandbox") can change state.
func IsMutating(method string) bool { return mutatingMethods[method] }

// Journal records every RPC the emulator received, in arrival order.
type Journal struct {
	mu    sync.Mutex
	calls []Call
	// changed is closed and replaced on every new call, so WaitFor sleeps until the journal
	// actually grows instead of polling it.
	changed chan struct{}
}

func (j *Journal) add(c Call) {
	j.mu.Lock()
	j.calls = append(j.calls, c)
	if j.changed != nil {
		close(j.changed)
		j.changed = nil
	}
	j.mu.Unlock()
}

// WaitFor blocks until the journal holds at least n calls to method, or ctx ends. Tests use it
// to act at a known point of a client's exchange (for example, cancel during a retry backoff).
func (j *Journal) WaitFor(ctx context.Context, method string, n int) error {
	for {
		j.mu.Lock()
		count := 0
		for _, c := range j.calls {
			if c.Method == method {
				count++
			}
		}
		if count >= n {
			j.mu.Unlock()
			return nil
		}
		if j.changed == nil {
			j.changed = make(chan struct{})
		}
		changed := j.changed
		j.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("journal holds %d %s calls, want %d: %w", count, method, n, ctx.Err())
		}
	}
}

// Calls returns a copy of every journaled call.
func (j *Journal) Calls() []Call {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Call(nil), j.calls...)
}

// Mutations returns the calls to mutating methods, whatever their outcome, so a test can assert
// that a client refused bad input before sending anything that could change the gateway.
func (j *Journal) Mutations() []Call {
	var out []Call
	for _, c := range j.Calls() {
		if IsMutating(c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Method returns the calls to one method.
func (j *Journal) Method(method string) []Call {
	var out []Call
	for _, c := range j.Calls() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets every journaled call.
func (j *Journal) Reset() {
	j.mu.Lock()
	j.calls = nil
	j.mu.Unlock()
}
