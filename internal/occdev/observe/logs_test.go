package observe

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/podlogs"
)

// A developer types --since as kubectl and compose take it: a duration or an RFC 3339 time; a
// value that is neither, or a duration that is not positive, is refused naming the flag, the
// value and the forms it takes.
func TestLogsSinceForms(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Time{
		"10m":                       now.Add(-10 * time.Minute),
		"1h30m":                     now.Add(-90 * time.Minute),
		"2026-01-02T15:00:00Z":      time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC),
		"2026-01-02T16:00:00+02:00": time.Date(2026, 1, 2, 14, 0, 0, 0, time.UTC),
	} {
		s, err := parseSince(v)
		if err != nil || !s.instant(now).Equal(want) {
			t.Errorf("--since %s: %v, %v; want %v", v, s.instant(now), err, want)
		}
	}
	if s, err := parseSince(""); err != nil || !s.instant(now).IsZero() {
		t.Errorf("no --since: %v %v", s, err)
	}
	for _, v := range []string{"yesterday", "10", "-5m", "0s", "2026-01-02"} {
		_, err := parseSince(v)
		var opt *option.Error
		if !errors.As(err, &opt) || opt.Option != "--since" || opt.Value != v ||
			!strings.Contains(err.Error(), "10m or 1h30m") || !strings.Contains(err.Error(), "2026-01-02T15:04:05Z") {
			t.Errorf("--since %q: %v", v, err)
		}
	}
}

// `occ dev logs` without an environment says where it looked and how to start one; a bad
// --tail is refused before the state is read.
func TestLogsWithoutEnvironment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	err := Logs(context.Background(), LogsOptions{StateDir: dir, Tail: -1})
	if !errors.Is(err, ErrNoEnvironment) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "occ dev up") {
		t.Errorf("no state: %v", err)
	}
	var opt *option.Error
	if err := Logs(context.Background(), LogsOptions{StateDir: dir, Tail: -2}); !errors.As(err, &opt) || opt.Option != "--tail" || opt.Value != "-2" {
		t.Errorf("--tail -2: %v", err)
	}
}

// A typo in the service name is refused with the names there are.
func TestLogsUnknownServiceNamesTheKnownOnes(t *testing.T) {
	all := []Service{
		{Name: "controller", Project: "p"},
		{Name: "openshell-gateway", Workload: &podlogs.Workload{Kind: "StatefulSet", Namespace: "oce-system", Name: "openshell-gateway"}},
	}
	_, err := ChooseServices(all, []string{"controler"}, "/state", nil)
	var opt *option.Error
	if !errors.As(err, &opt) || opt.Option != "SERVICE" || opt.Value != "controler" || !strings.Contains(err.Error(), "name one of: controller, openshell-gateway") {
		t.Errorf("unknown service: %v", err)
	}
	_, err = ChooseServices(all, []string{"x"}, "/state", errors.New("the cluster did not answer"))
	if err == nil || !strings.Contains(err.Error(), "the list may be incomplete: the cluster did not answer") {
		t.Errorf("unknown service with an incomplete list: %v", err)
	}
	got, err := ChooseServices(all, []string{"openshell-gateway", "openshell-gateway"}, "/state", nil)
	if err != nil || len(got) != 1 {
		t.Errorf("a service named twice: %v %v", got, err)
	}
}

// Lines of several services interleave whole, each with its service's prefix padded as compose
// pads it; a last line without a newline still ends one.
func TestLogLinesInterleaveWhole(t *testing.T) {
	var out strings.Builder
	s := &lineSink{w: &out, width: len("worker-kubernetes")}
	a, b := s.output("controller"), s.output("worker-kubernetes")
	_, _ = a.Write([]byte("first half "))
	_, _ = b.Write([]byte("worker line\n"))
	_, _ = a.Write([]byte("second half\nlast"))
	_ = a.Close()
	_ = b.Close()
	want := "worker-kubernetes | worker line\n" +
		"controller        | first half second half\n" +
		"controller        | last\n"
	if out.String() != want {
		t.Errorf("interleaved:\n%s\nwant:\n%s", out.String(), want)
	}
	var bare strings.Builder
	c := (&lineSink{w: &bare}).output("")
	_, _ = c.Write([]byte("x\n"))
	if bare.String() != "x\n" {
		t.Errorf("one service, no prefix: %q", bare.String())
	}
}
