package emulator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/testbed"
)

// `occ gateway-emulator --kubeconfig ...`: the standalone emulator serves against the cluster a
// kubeconfig names, demands the token from the token file, and stops when its context ends.
func TestRunStandaloneAgainstKubeconfig(t *testing.T) {
	kc := testbed.Client(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	mustNot(t, os.WriteFile(tokenFile, []byte("standalone-token\n"), 0o600))
	cfg := StandaloneConfig{Listen: "127.0.0.1:0", UseKubernetes: true, Kubeconfig: testbed.Kubeconfig(t), TokenFile: tokenFile}

	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- RunStandalone(ctx, cfg, func(addr string) { addrs <- addr }) }()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("emulator stopped before serving: %v", err)
	}

	c := dialAddr(t, addr)
	callCtx := metadataCtx(ctxT(t), "standalone-token")
	ns := kubeWorkspace(callCtx, t, kc, c)
	_, err := c.CreateSandbox(callCtx, &pb.CreateSandboxRequest{Name: "manual", WorkspaceScope: scope(ns), Spec: minimalSpec()})
	mustNot(t, err)
	if _, err := kc.CoreV1().Pods(ns).Get(callCtx, "manual", metav1.GetOptions{}); err != nil {
		t.Fatalf("the standalone emulator made no Pod: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// Bad standalone settings are refused with the flag named and the token never shown.
func TestStandaloneConfigRefusals(t *testing.T) {
	dir := t.TempDir()
	two := filepath.Join(dir, "two-lines")
	mustNot(t, os.WriteFile(two, []byte("tok-one-secret\ntok-two-secret\n"), 0o600))
	cases := map[string]StandaloneConfig{
		"--token-file":           {TokenFile: two},
		"--token-file ":          {TokenFile: filepath.Join(dir, "missing")},
		"--tls-cert":             {TLSCertFile: "cert.pem"},
		"--admission-limit":      {AdmissionLimit: -1},
		"--drop-connections-for": {DropConnectionsFor: -time.Second},
	}
	for flag, cfg := range cases {
		_, err := cfg.Options()
		if err == nil || !strings.Contains(err.Error(), strings.TrimSpace(flag)) {
			t.Fatalf("%s: err = %v", flag, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("%s: the error shows the token: %v", flag, err)
		}
	}
}

// `occ gateway-emulator --drop-connections-for 10s` behaves like the pinned Gateway in its first
// seconds: the connection of each call is closed after the call was executed.
func TestStandaloneDropConnectionsFor(t *testing.T) {
	opts, err := StandaloneConfig{Listen: "127.0.0.1:0", DropConnectionsFor: 10 * time.Second}.Options()
	mustNot(t, err)
	clock := NewFakeClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	opts.Clock = clock.Now
	s := StartT(t, opts)
	c := dial(t, s)
	ctx := ctxT(t)
	req := &pb.CreateWorkspaceRequest{Name: "team-s", RequestId: rid()}
	_, err = c.CreateWorkspace(ctx, req)
	wantCode(t, err, codes.Unavailable)
	if _, err := c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "team-s"}); status.Code(err) != codes.Unavailable {
		t.Fatalf("GetWorkspace inside the window = %v, want the connection dropped", err)
	}
	clock.Advance(10 * time.Second)
	if _, err := c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "team-s"}); err != nil {
		t.Fatalf("the workspace created inside the window is missing: %v", err)
	}
}
