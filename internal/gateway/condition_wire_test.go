package gateway

import (
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// conditionBytes encodes SandboxResponse{sandbox{status{conditions[cond]}}} by hand, the way a
// gateway puts it on the wire, so the test does not depend on our generated code's view.
func conditionBytes(cond []byte) []byte {
	status := protowire.AppendTag(nil, 5, protowire.BytesType)
	status = protowire.AppendBytes(status, cond)
	sandbox := protowire.AppendTag(nil, 3, protowire.BytesType)
	sandbox = protowire.AppendBytes(sandbox, status)
	resp := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(resp, sandbox)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// An upstream v0.1 gateway reports a Sandbox condition's transition_time as a Timestamp at
// field 105 (5 is reserved); the client maps it to the condition's time, and a v0.0.x-style
// string at 5 is not mistaken for it.
func TestSandboxConditionTransitionTimeWire(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	ts := protowire.AppendTag(nil, 1, protowire.VarintType)
	ts = protowire.AppendVarint(ts, uint64(when.Unix()))
	ts = protowire.AppendTag(ts, 2, protowire.VarintType)
	ts = protowire.AppendVarint(ts, uint64(when.Nanosecond()))

	cond := appendString(nil, 1, "Ready")
	cond = appendString(cond, 2, "True")
	cond = appendString(cond, 3, "Ready")
	cond = protowire.AppendTag(cond, 105, protowire.BytesType)
	cond = protowire.AppendBytes(cond, ts)

	var resp openshellv1.SandboxResponse
	if err := proto.Unmarshal(conditionBytes(cond), &resp); err != nil {
		t.Fatalf("decode v0.1 condition: %v", err)
	}
	sb := sandboxFromWire(resp.GetSandbox())
	if len(sb.Conditions) != 1 {
		t.Fatalf("conditions = %+v, want 1", sb.Conditions)
	}
	c := sb.Conditions[0]
	if c.Type != "Ready" || c.Status != "True" || c.Reason != "Ready" || !c.TransitionTime.Equal(when) {
		t.Errorf("condition = %+v, want Ready=True (Ready) at %s", c, when)
	}

	// The v0.0.x string at 5 is reserved: it stays an unknown field and sets no time.
	old := appendString(appendString(nil, 1, "Ready"), 5, "2026-01-02T03:04:05Z")
	resp.Reset()
	if err := proto.Unmarshal(conditionBytes(old), &resp); err != nil {
		t.Fatalf("decode v0.0.x condition: %v", err)
	}
	sb = sandboxFromWire(resp.GetSandbox())
	if len(sb.Conditions) != 1 || !sb.Conditions[0].TransitionTime.IsZero() {
		t.Errorf("v0.0.x condition = %+v, want one condition with no transition time", sb.Conditions)
	}
}
