package platform

import (
	"context"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/gateway/emulator"
)

// `occ dev up` checks a Gateway that has just become ready and drops its connections, as the
// pinned OpenShell release does shortly after it starts: the check rides the drops out through
// the gateway client's retries and passes once the Gateway answers.
func TestCheckGatewayHealthRidesOutStartupDrops(t *testing.T) {
	clock := emulator.NewFakeClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	const window = 10 * time.Second
	emu := emulator.StartT(t, emulator.Options{Clock: clock.Now, Faults: []emulator.Fault{
		{Kind: emulator.FaultDropConnection, Window: window},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- CheckGatewayHealth(ctx, nil, HealthCheck{Endpoint: emu.Addr(), Timeout: time.Minute})
	}()
	if err := emu.Journal().WaitFor(ctx, "Health", 2); err != nil {
		t.Fatal(err)
	}
	clock.Advance(window)
	if err := <-done; err != nil {
		t.Fatalf("CheckGatewayHealth across the startup drops: %v", err)
	}
	calls := emu.Journal().Method("Health")
	if calls[0].Fault != emulator.FaultDropConnection || calls[len(calls)-1].Fault != emulator.FaultNone {
		t.Fatalf("Health calls = %+v, want dropped calls and then an answered one", calls)
	}
}
