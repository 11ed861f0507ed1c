package gateway_test

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/testbed"
)

// harnessSpec is a small but complete sandbox spec of the shape the driver sends.
func harnessSpec(providers ...string) *pb.SandboxSpec {
	return &pb.SandboxSpec{
		LogLevel:    "info",
		Environment: map[string]string{"HOME": "/sandbox/.openclaw-runtime/home", "TMPDIR": "/tmp"},
		Command:     []string{"/usr/local/bin/node", "/app/harness.js"},
		Providers:   providers,
		Template: &pb.SandboxTemplate{
			Image:  "registry.example/openclaw/harness:1",
			Labels: map[string]string{"app.kubernetes.io/name": "harness", "openclaw.dev/agent": "agent-1"},
		},
		Policy: &pb.SandboxPolicy{
			Version:  1,
			Landlock: &pb.LandlockPolicy{Compatibility: "hard_requirement"},
			Process:  &pb.ProcessPolicy{RunAsUser: "1000", RunAsGroup: "1000"},
			NetworkPolicies: map[string]*pb.NetworkPolicyRule{"source-control": {
				Name:      "source-control",
				Endpoints: []*pb.NetworkEndpoint{{Host: "github.com", Ports: []uint32{443}, Tls: pb.NetworkTlsMode_NETWORK_TLS_MODE_SKIP}},
				Binaries:  []*pb.NetworkBinary{{Path: "/usr/bin/git"}},
			}},
		},
	}
}

func sandboxRequest(ws, name string, providers ...string) gateway.CreateSandboxRequest {
	return gateway.CreateSandboxRequest{
		Workspace:    ws,
		Name:         name,
		Labels:       map[string]string{"openclaw.dev/agent": "agent-1"},
		Annotations:  map[string]string{"openclaw.dev/revision-id": "rev_1"},
		Spec:         harnessSpec(providers...),
		RevisionUUID: gateway.NewRequestID(),
	}
}

// waitForPhase polls GetSandbox, as the driver does, until the sandbox reports phase.
func waitForPhase(t *testing.T, c *gateway.Client, ws, name string, phase gateway.SandboxPhase) *gateway.Sandbox {
	t.Helper()
	ctx := testContext(t)
	deadline := time.Now().Add(time.Minute)
	for {
		sb, err := c.GetSandbox(ctx, ws, name)
		if err != nil {
			t.Fatalf("GetSandbox %s: %v", name, err)
		}
		if sb.Phase == phase {
			return sb
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s stayed %s, want %s", name, sb.Phase, phase)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// provisionHarness for dedicated Codex: create the sandbox with its bearer-passthrough
// exposure, see its Harness Pod in the cluster, wait for READY, check the service, adopt on a
// second pass without a second create, delete it and see the Pod go.
func TestConformanceSandboxLifecycle(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	req := sandboxRequest(ws, "sb-codex")
	req.ServiceExposures = []gateway.ServiceExposure{{Service: "", TargetPort: 18789, AuthorizationMode: gateway.AuthorizationBearerPassthrough}}

	res, err := c.CreateSandbox(ctx, req)
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	if !res.Created || res.RequestID != req.RevisionUUID || res.Sandbox.Name != "sb-codex" || res.Sandbox.ID == "" {
		t.Fatalf("result = %+v, want a sandbox created with request_id = the revision UUID", res)
	}
	if res.Sandbox.Workspace != ws || res.Sandbox.Labels["openclaw.dev/agent"] != "agent-1" || res.Sandbox.Annotations["openclaw.dev/revision-id"] != "rev_1" {
		t.Fatalf("sandbox metadata = %+v", res.Sandbox.ObjectMeta)
	}
	if res.Sandbox.Phase == gateway.SandboxPhaseReady {
		t.Fatal("a sandbox cannot be READY before its Pod is")
	}
	if u, err := url.Parse(res.ServiceURLs[""]); err != nil || u.Scheme != "http" || u.Path != "/" {
		t.Fatalf("service_urls[\"\"] = %q, want an http origin", res.ServiceURLs[""])
	}

	t.Run("harness pod", func(t *testing.T) {
		tg.emulatorOnly(t, "plays the kubelet on the test bed")
		pod, err := tg.kube.CoreV1().Pods(ws).Get(ctx, "sb-codex", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Harness Pod: %v", err)
		}
		if pod.Labels["openshell.ai/sandbox-id"] != res.Sandbox.ID || pod.Labels["openshell.ai/managed-by"] != "openshell" {
			t.Fatalf("Harness Pod labels = %v", pod.Labels)
		}
		testbed.MarkPodReady(ctx, t, tg.kube, ws, "sb-codex")
		ready := waitForPhase(t, c, ws, "sb-codex", gateway.SandboxPhaseReady)
		if !proto.Equal(ready.Spec, req.Spec) {
			t.Fatalf("stored spec differs from the request:\n got %v\nwant %v", ready.Spec, req.Spec)
		}
	})

	svc, err := c.GetService(ctx, ws, "sb-codex", "")
	if err != nil {
		t.Fatalf("GetService: %v", err)
	}
	if svc.TargetPort != 18789 || svc.AuthorizationMode != gateway.AuthorizationBearerPassthrough || svc.SandboxID != res.Sandbox.ID {
		t.Fatalf("service = %+v", svc)
	}
	// The URL the driver uses carries the port this client reaches the gateway on.
	_, clientPort, _ := net.SplitHostPort(c.Target())
	if u, _ := url.Parse(svc.URL); u.Port() != clientPort {
		t.Fatalf("service URL %s does not use the client's gateway port %s", svc.URL, clientPort)
	}
	if _, err := c.GetService(ctx, ws, "sb-codex", "other"); !gateway.IsNotFound(err) {
		t.Fatalf("GetService of an unexposed service = %v, want NOT_FOUND", err)
	}

	// The next reconcile finds the sandbox and never sends a second create.
	again, err := c.CreateSandbox(ctx, req)
	if err != nil {
		t.Fatalf("second CreateSandbox: %v", err)
	}
	if again.Created || again.Sandbox.ID != res.Sandbox.ID || len(again.ServiceURLs) != 0 {
		t.Fatalf("second pass = %+v, want the existing sandbox, not created", again)
	}

	del, err := c.DeleteSandbox(ctx, ws, "sb-codex")
	if err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	if del.SandboxID != res.Sandbox.ID {
		t.Fatalf("delete result = %+v, want sandbox id %s", del, res.Sandbox.ID)
	}
	if _, err := c.GetSandbox(ctx, ws, "sb-codex"); !gateway.IsNotFound(err) {
		t.Fatalf("GetSandbox after delete = %v, want NOT_FOUND", err)
	}
	again2, err := c.DeleteSandbox(ctx, ws, "sb-codex")
	if err != nil || again2.Outcome != gateway.OutcomeAlreadyAbsent {
		t.Fatalf("repeated DeleteSandbox = %+v, %v; want ALREADY_ABSENT", again2, err)
	}

	t.Run("wire", func(t *testing.T) {
		tg.emulatorOnly(t, "reads the journal and the test bed")
		if _, err := tg.kube.CoreV1().Pods(ws).Get(ctx, "sb-codex", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Harness Pod after delete: %v, want NotFound", err)
		}
		creates := tg.emu.Journal().Method("CreateSandbox")
		if len(creates) != 1 {
			t.Fatalf("gateway saw %d CreateSandbox calls, want 1", len(creates))
		}
		r := creates[0].Request.(*pb.CreateSandboxRequest)
		if r.GetRequestId() != req.RevisionUUID || r.GetWorkspaceScope().GetWorkspace() != ws ||
			len(r.GetServiceExposures()) != 1 || r.GetServiceExposures()[0].GetAuthorizationMode() != gateway.AuthorizationBearerPassthrough {
			t.Fatalf("CreateSandbox request = %v", r)
		}
	})
}

// A retried create with the same request_id is answered by the replay of the first success;
// the same id with another payload and a reused name are refused.
func TestConformanceCreateSandboxReplayAndRefusals(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	req := sandboxRequest(ws, "sb-replay")
	id := gateway.NewRequestID()

	first, err := c.CreateSandboxOnce(ctx, req, id)
	if err != nil || first.Replayed {
		t.Fatalf("first CreateSandbox = %+v, %v", first, err)
	}
	replay, err := c.CreateSandboxOnce(ctx, req, strings.ToUpper(id))
	if err != nil {
		t.Fatalf("replayed CreateSandbox: %v", err)
	}
	if !replay.Replayed || replay.Sandbox.ID != first.Sandbox.ID {
		t.Fatalf("replay = %+v, want the same sandbox marked replayed", replay)
	}

	changed := req
	changed.Labels = map[string]string{"openclaw.dev/agent": "agent-2"}
	_, err = c.CreateSandboxOnce(ctx, changed, id)
	var gerr *gateway.Error
	if !gateway.IsReplayRefused(err) || !errors.As(err, &gerr) || gerr.Reason != gateway.ReasonRequestIDPayloadMismatch {
		t.Fatalf("same id, other payload = %v, want REQUEST_ID_PAYLOAD_MISMATCH", err)
	}
	if _, err := c.CreateSandboxOnce(ctx, req, gateway.NewRequestID()); !gateway.IsAlreadyExists(err) {
		t.Fatalf("name reuse with a fresh id = %v, want ALREADY_EXISTS", err)
	}
	if _, err := c.DeleteSandbox(ctx, ws, "sb-replay"); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
}

// An earlier create attempt with the revision UUID errored (its workspace did not exist yet),
// so the gateway holds that request_id as REQUEST_OUTCOME_UNCERTAIN forever. CreateSandbox
// checks that no sandbox exists and moves on to the first derived id.
func TestConformanceCreateSandboxRotatesAfterReplayRefusal(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	ws := uniqueName(t, "occ")
	req := sandboxRequest(ws, "sb-rotate")
	if _, err := c.CreateSandboxOnce(ctx, req, req.RevisionUUID); !gateway.IsNotFound(err) {
		t.Fatalf("create in a missing workspace = %v, want NOT_FOUND", err)
	}
	tg.namespace(t, ws)
	if _, err := c.CreateWorkspace(ctx, ws, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupWorkspace(t, c, ws) })

	res, err := c.CreateSandbox(ctx, req)
	if err != nil {
		t.Fatalf("CreateSandbox: %v", err)
	}
	ids, _ := gateway.CreateSandboxRequestIDs(req.RevisionUUID)
	if !res.Created || res.RequestID != ids[1] {
		t.Fatalf("result = %+v, want creation with the first derived id %s", res, ids[1])
	}
	if !strings.Contains(tg.logs.String(), "trying the next") {
		t.Fatalf("the rotation was not logged: %s", tg.logs.String())
	}
	t.Run("wire", func(t *testing.T) {
		tg.emulatorOnly(t, "reads the journal")
		var got []string
		for _, call := range tg.emu.Journal().Method("CreateSandbox") {
			got = append(got, call.Request.(*pb.CreateSandboxRequest).GetRequestId()+"="+call.Code.String())
		}
		want := []string{ids[0] + "=NotFound", ids[0] + "=FailedPrecondition", ids[1] + "=OK"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("CreateSandbox calls = %v, want %v", got, want)
		}
	})
	if _, err := c.DeleteSandbox(ctx, ws, "sb-rotate"); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
}

// A gateway without readable key material refuses every protected request_id: after all 16
// ids the error says so and names both fixes; nothing was created.
func TestConformanceCreateSandboxExhaustsRequestIDs(t *testing.T) {
	tg := newTarget(t, emulator.Options{NoReplayKeyMaterial: true})
	tg.emulatorOnly(t, "runs a gateway without replay key material")
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	req := sandboxRequest(ws, "sb-refused")
	_, err := c.CreateSandbox(ctx, req)
	var ex *gateway.CreateExhaustedError
	if !errors.As(err, &ex) || !gateway.IsReplayRefused(err) {
		t.Fatalf("CreateSandbox = %v, want CreateExhaustedError", err)
	}
	want := "OpenShell refused all 16 create request IDs for Sandbox sb-refused (last: "
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; check that the gateway's JWT or TLS key material is readable, or deploy a new revision.") {
		t.Fatalf("error %q lacks the reference wording", err)
	}
	if n := len(tg.emu.Journal().Method("CreateSandbox")); n != gateway.MaxCreateSandboxRequestIDs {
		t.Fatalf("gateway saw %d creates, want %d", n, gateway.MaxCreateSandboxRequestIDs)
	}
	if _, err := c.GetSandbox(ctx, ws, "sb-refused"); !gateway.IsNotFound(err) {
		t.Fatalf("GetSandbox = %v, want NOT_FOUND", err)
	}
	pods, err := tg.kube.CoreV1().Pods(ws).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods in %s: %v %v, want none", ws, len(pods.Items), err)
	}
}

// A caller holding all of the gateway's durable admissions gets
// SANDBOX_ADMISSION_LIMIT_REACHED at once, without retries that could only add load.
func TestConformanceAdmissionLimit(t *testing.T) {
	tg := newTarget(t, emulator.Options{AdmissionLimit: 2})
	tg.emulatorOnly(t, "lowers the admission limit to 2")
	c := tg.client(t, fastRetry)
	ctx := testContext(t)
	ws := uniqueName(t, "occ") // never created: each create errors and stays unresolved
	for range 2 {
		if _, err := c.CreateSandboxOnce(ctx, sandboxRequest(ws, "sb-limit"), gateway.NewRequestID()); !gateway.IsNotFound(err) {
			t.Fatalf("create in a missing workspace = %v, want NOT_FOUND", err)
		}
	}
	tg.emu.Journal().Reset()
	_, err := c.CreateSandboxOnce(ctx, sandboxRequest(ws, "sb-limit"), gateway.NewRequestID())
	var gerr *gateway.Error
	if !gateway.IsAdmissionLimit(err) || !errors.As(err, &gerr) || gerr.ErrorCode() != "SANDBOX_ADMISSION_LIMIT_REACHED" {
		t.Fatalf("third create = %v, want SANDBOX_ADMISSION_LIMIT_REACHED", err)
	}
	if !strings.HasPrefix(err.Error(), "OpenShell refused CreateSandbox: ") || !strings.Contains(err.Error(), "limit of 1000 durable request admissions") {
		t.Fatalf("error %q lacks the seed wording", err)
	}
	if gateway.IsUnavailable(err) {
		t.Fatal("the admission limit must not read as a plain outage")
	}
	if n := len(tg.emu.Journal().Calls()); n != 1 {
		t.Fatalf("gateway saw %d calls, want 1 (no retry)", n)
	}
}

// Namespace cleanup while a sandbox remains: the gateway refuses to delete the workspace.
func TestConformanceDeleteWorkspaceRefusedWhileSandboxRemains(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	if _, err := c.CreateSandbox(ctx, sandboxRequest(ws, "sb-left")); err != nil {
		t.Fatal(err)
	}
	_, err := c.DeleteWorkspace(ctx, ws)
	if !errors.Is(err, gateway.ErrFailedPrecondition) || !strings.Contains(err.Error(), "still contains resources") {
		t.Fatalf("DeleteWorkspace with a sandbox = %v, want FAILED_PRECONDITION naming the contents", err)
	}
	if _, err := c.DeleteSandbox(ctx, ws, "sb-left"); err != nil {
		t.Fatal(err)
	}
	if outcome, err := c.DeleteWorkspace(ctx, ws); err != nil || outcome != gateway.OutcomeCompleted {
		t.Fatalf("DeleteWorkspace once empty = %v, %v", outcome, err)
	}
}

// The lost response: the gateway commits the change and the response never arrives. The
// client's retry carries the same request_id, so the gateway replays the first success and no
// second object exists.
func TestConformanceLostResponseConverges(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	tg.emulatorOnly(t, "drops responses after commit")
	c := tg.client(t, fastRetry)
	ctx := testContext(t)

	checkRetriedOnce := func(t *testing.T, method string, requestID func(call emulator.Call) string) {
		t.Helper()
		calls := tg.emu.Journal().Method(method)
		if len(calls) != 2 {
			t.Fatalf("gateway saw %d %s calls, want 2 (the lost one and the retry)", len(calls), method)
		}
		if calls[0].Fault != emulator.FaultDropResponse || !calls[1].Replayed || requestID(calls[0]) != requestID(calls[1]) {
			t.Fatalf("%s calls = %+v, want a dropped call and a replay with the same request_id", method, calls)
		}
	}

	ws := uniqueName(t, "occ")
	tg.namespace(t, ws)
	t.Run("CreateWorkspace", func(t *testing.T) {
		tg.emu.Inject(emulator.Fault{Method: "CreateWorkspace", Kind: emulator.FaultDropResponse})
		w, err := c.CreateWorkspace(ctx, ws, map[string]string{"k": "v"})
		if err != nil {
			t.Fatalf("CreateWorkspace with a lost response: %v", err)
		}
		got, err := c.GetWorkspace(ctx, ws)
		if err != nil || got.ID != w.ID {
			t.Fatalf("GetWorkspace = %+v, %v; want the one workspace %s", got, err, w.ID)
		}
		checkRetriedOnce(t, "CreateWorkspace", func(call emulator.Call) string {
			return call.Request.(*pb.CreateWorkspaceRequest).GetRequestId()
		})
	})

	t.Run("CreateSandbox", func(t *testing.T) {
		tg.emu.Inject(emulator.Fault{Method: "CreateSandbox", Kind: emulator.FaultDropResponse})
		req := sandboxRequest(ws, "sb-lost")
		res, err := c.CreateSandbox(ctx, req)
		if err != nil {
			t.Fatalf("CreateSandbox with a lost response: %v", err)
		}
		if !res.Created || !res.Replayed || res.RequestID != req.RevisionUUID {
			t.Fatalf("result = %+v, want created through the replay of the revision UUID", res)
		}
		checkRetriedOnce(t, "CreateSandbox", func(call emulator.Call) string {
			return call.Request.(*pb.CreateSandboxRequest).GetRequestId()
		})
		pods, err := tg.kube.CoreV1().Pods(ws).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("Harness Pods in %s = %d (%v), want exactly 1", ws, len(pods.Items), err)
		}
		if _, err := c.DeleteSandbox(ctx, ws, "sb-lost"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("DeleteWorkspace", func(t *testing.T) {
		tg.emu.Inject(emulator.Fault{Method: "DeleteWorkspace", Kind: emulator.FaultDropResponse})
		outcome, err := c.DeleteWorkspace(ctx, ws)
		if err != nil || outcome != gateway.OutcomeCompleted {
			t.Fatalf("DeleteWorkspace with a lost response = %v, %v; want the replayed COMPLETED", outcome, err)
		}
		if _, err := c.GetWorkspace(ctx, ws); !gateway.IsNotFound(err) {
			t.Fatalf("GetWorkspace = %v, want NOT_FOUND", err)
		}
		checkRetriedOnce(t, "DeleteWorkspace", func(call emulator.Call) string {
			return call.Request.(*pb.DeleteWorkspaceRequest).GetRequestId()
		})
	})

	// The response is held until the client's own per-call deadline expires: the retry after
	// DEADLINE_EXCEEDED converges the same way.
	t.Run("CreateWorkspace past the deadline", func(t *testing.T) {
		slow := tg.client(t, fastRetry, func(cfg *gateway.Config) { cfg.RequestTimeout = gateway.MinRequestTimeout })
		tg.emu.Journal().Reset()
		ws2 := uniqueName(t, "occ")
		tg.namespace(t, ws2)
		tg.emu.Inject(emulator.Fault{Method: "CreateWorkspace", Kind: emulator.FaultDropResponse, Code: codes.DeadlineExceeded})
		if _, err := slow.CreateWorkspace(ctx, ws2, nil); err != nil {
			t.Fatalf("CreateWorkspace past the deadline: %v", err)
		}
		t.Cleanup(func() { cleanupWorkspace(t, c, ws2) })
		checkRetriedOnce(t, "CreateWorkspace", func(call emulator.Call) string {
			return call.Request.(*pb.CreateWorkspaceRequest).GetRequestId()
		})
	})
}

// Revision retirement while the Harness Pod terminates: the gateway answers ACCEPTED and keeps
// the sandbox DELETING until the Pod is gone; DeleteSandbox waits for that instead of
// returning early.
func TestConformanceDeleteSandboxWaitsForThePod(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	tg.emulatorOnly(t, "holds the Harness Pod with a finalizer on the test bed")
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	created, err := c.CreateSandbox(ctx, sandboxRequest(ws, "sb-slow"))
	if err != nil {
		t.Fatal(err)
	}
	const finalizer = "conformance.occ.dev/hold"
	pods := tg.kube.CoreV1().Pods(ws)
	pod, err := pods.Get(ctx, "sb-slow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Finalizers = append(pod.Finalizers, finalizer)
	if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	gets := len(tg.emu.Journal().Method("GetSandbox"))
	done := make(chan error, 1)
	var res *gateway.DeleteSandboxResult
	go func() {
		var err error
		res, err = c.DeleteSandbox(ctx, ws, "sb-slow")
		done <- err
	}()
	// The delete was accepted and the client has polled at least once while the Pod stays.
	waitForCalls(t, tg.emu, "DeleteSandbox", 1)
	waitForCalls(t, tg.emu, "GetSandbox", gets+1)
	select {
	case err := <-done:
		t.Fatalf("DeleteSandbox returned (%v) while the Harness Pod still exists", err)
	default:
	}
	pod, err = pods.Get(ctx, "sb-slow", metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp == nil {
		t.Fatalf("Harness Pod: %v; want it terminating (deletionTimestamp set)", err)
	}
	pod.Finalizers = nil
	if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("DeleteSandbox: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("DeleteSandbox did not return after the Pod was gone")
	}
	if res.Outcome != gateway.OutcomeAccepted || res.SandboxID != created.Sandbox.ID {
		t.Fatalf("result = %+v, want ACCEPTED for %s", res, created.Sandbox.ID)
	}
	if _, err := c.GetSandbox(ctx, ws, "sb-slow"); !gateway.IsNotFound(err) {
		t.Fatalf("GetSandbox after the wait = %v, want NOT_FOUND", err)
	}
}
