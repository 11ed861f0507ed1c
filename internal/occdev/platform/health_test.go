package platform

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/occdev/option"
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

// `occ dev up --gateway-endpoint http://user:token@gw:8080`, or a scheme the client cannot dial:
// refused as a bad setting that never repeats the token; host:port and an http origin pass.
func TestCheckHealthEndpoint(t *testing.T) {
	const setting = "--gateway-endpoint (OCC_DEVELOPMENT_GATEWAY_ENDPOINT)"
	for _, ok := range []string{"", "127.0.0.1:30051", "http://gw.example:8080"} {
		if got, err := CheckHealthEndpoint(ok, setting); err != nil || got != ok {
			t.Errorf("%q: %q, %v; want it accepted as given", ok, got, err)
		}
	}
	for raw, want := range map[string]string{
		"http://user:sekrit-token@gw:8080":   "must not carry credentials",
		"http://gw:8080/?token=sekrit-token": "must not carry credentials",
		"ftp://gw:8080":                      setting,
	} {
		_, err := CheckHealthEndpoint(raw, setting)
		var oe *option.Error
		if !errors.As(err, &oe) || oe.Option != setting || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "sekrit-token") {
			t.Errorf("%q: %v; want an option error saying %q without the token", raw, err, want)
		}
	}
}
