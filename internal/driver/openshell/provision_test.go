package openshell

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/testbed"
)

// prepare runs ensureNamespace and creates the credential-source provider the Credential
// Gateway's addSource would have made, so a Codex revision can bind it.
func (e *env) prepare(d *Driver) {
	e.t.Helper()
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.client.CreateProvider(e.ctx, e.ns.Name, gateway.ProviderSpec{
		Name:        CredentialProviderName("cs_openai_default"),
		Labels:      CredentialProviderLabels(e.ns.ID, "cs_openai_default"),
		Type:        "openai",
		Credentials: gateway.Secrets{"OPENAI_API_KEY": canary},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// attach runs Compute's attachment step and returns the Harness context carrying the result.
func (e *env) attach(d *Driver, h driver.HarnessContext) driver.HarnessContext {
	e.t.Helper()
	att, err := d.AttachForRevision(e.ctx, h, []driver.CredentialSource{{ID: "cs_openai_default", NamespaceID: e.ns.ID, CredentialGatewayID: testCGID}})
	if err != nil {
		e.t.Fatal(err)
	}
	h.Requirements.CredentialAttachments = att
	return h
}

// A dedicated Codex revision provisions one Sandbox whose request is exactly what render
// prints; the gateway's controller starts the Harness Pod; repeating the call adopts it.
func TestProvisionCodexThreeTimes(t *testing.T) {
	e := newEnv(t, envOptions{})
	var logs bytes.Buffer
	opts := testOptions(t, nil)
	opts.Gateway = e.client
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	rendered, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	e.counter.reset()
	var first driver.SandboxResourceRef
	for i := 0; i < 3; i++ {
		ref, err := d.ProvisionHarness(e.ctx, h)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if i == 0 {
			first = ref
		} else if ref != first {
			t.Fatalf("run %d returned %+v, first %+v", i+1, ref, first)
		}
	}
	if err := first.VerifyFor(e.ns.Name, h.Revision); err != nil {
		t.Fatal(err)
	}
	creates := e.gw.Journal().Method("CreateSandbox")
	if len(creates) != 1 || creates[0].Code != codes.OK {
		t.Fatalf("CreateSandbox calls %+v", creates)
	}
	if !proto.Equal(creates[0].Request, rendered) {
		t.Fatalf("sent request differs from render:\n%v\nvs\n%v", creates[0].Request, rendered)
	}
	if e.counter.total() != 0 {
		t.Fatalf("provisioning made Kubernetes requests: %v", e.counter.log)
	}
	pod, err := e.admin.CoreV1().Pods(e.ns.Name).Get(e.ctx, first.ResourceName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Harness Pod: %v", err)
	}
	if pod.Labels[driver.LabelRevision] != h.Revision.ID || pod.Labels[driver.LabelNetworkProfile] != driver.NetworkProfileProviderFenced {
		t.Fatalf("Harness Pod labels %v", pod.Labels)
	}
	e.requireNoLeak(canary, logs.String())

	// Compute's gate: pending until the Harness is ready, then every attachment ready.
	statuses, err := d.AttachmentStatus(e.ctx, e.nctx(), first, h.Requirements.CredentialAttachments)
	if err != nil {
		t.Fatal(err)
	}
	if ready, err := driver.EvaluateAttachments(h.Requirements.CredentialAttachments, statuses); ready || err != nil {
		t.Fatalf("before the Pod is ready: ready=%v err=%v statuses=%+v", ready, err, statuses)
	}
	testbed.MarkPodReady(e.ctx, t, e.admin, e.ns.Name, first.ResourceName)
	statuses, err = d.AttachmentStatus(e.ctx, e.nctx(), first, h.Requirements.CredentialAttachments)
	if err != nil {
		t.Fatal(err)
	}
	if ready, err := driver.EvaluateAttachments(h.Requirements.CredentialAttachments, statuses); !ready || err != nil {
		t.Fatalf("after the Pod is ready: ready=%v err=%v statuses=%+v", ready, err, statuses)
	}
}

// Native OpenClaw gets a Sandbox with no inbound exposure.
func TestProvisionOpenClaw(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessOpenClaw))
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	req := e.gw.Journal().Method("CreateSandbox")[0].Request.(*openshellv1.CreateSandboxRequest)
	if len(req.ServiceExposures) != 0 {
		t.Fatalf("exposures %v", req.ServiceExposures)
	}
	if _, err := e.client.GetService(e.ctx, e.ns.Name, ref.ResourceName, ""); !gateway.IsNotFound(err) {
		t.Fatalf("GetService: %v", err)
	}
}

// Every provisioning refusal happens before the gateway is called at all (so certainly before
// any mutating RPC) and without a Kubernetes request; secrets in the refused revision never
// reach an error, a log line or the gateway.
func TestProvisionRefusalsCallNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	d0 := e.driver(nil)
	e.prepare(d0)
	// The Secret a Secret-backed variable would read; its value is the canary.
	_, err := e.admin.CoreV1().Secrets(e.ns.Name).Create(e.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "openclaw-agent-transport"},
		StringData: map[string]string{"token": canary},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range refusalCases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			opts := testOptions(t, tc.config)
			opts.Gateway = e.client
			opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			d, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			h := e.hctx(driver.HarnessCodex)
			if tc.hctx != nil {
				tc.hctx(&h)
			}
			e.gw.Journal().Reset()
			e.counter.reset()
			_, err = d.ProvisionHarness(e.ctx, h)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
			if calls := e.gw.Journal().Calls(); len(calls) != 0 {
				t.Fatalf("gateway calls %v", e.methods())
			}
			if e.counter.total() != 0 {
				t.Fatalf("Kubernetes requests %v", e.counter.log)
			}
			e.requireNoLeak(canary, err.Error(), logs.String())
		})
	}
}

// An existing Sandbox with this revision's name but other content (here another image) is
// refused, not adopted.
func TestProvisionRefusesForeignSandbox(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	p, err := d.plan(h)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime provider the foreign Sandbox names exists, as after an earlier provision.
	if err := d.ensureRuntime(e.ctx, p.workspace, p.runtime); err != nil {
		t.Fatal(err)
	}
	foreign := p.gatewayRequest()
	foreign.Spec = proto.Clone(foreign.Spec).(*openshellv1.SandboxSpec)
	foreign.Spec.Template.Image = "attacker/image:latest"
	if _, err := e.client.CreateSandbox(e.ctx, foreign); err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	_, err = d.ProvisionHarness(e.ctx, h)
	want := "Refusing OpenShell Sandbox " + p.name + " without exact AgentRevision ownership and content."
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v", err)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Fatalf("mutations %v", m)
	}
}

// A Sandbox that is being deleted or has stopped is not adopted either.
func TestProvisionRefusesStoppedSandbox(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessOpenClaw))
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.gw.SetSandboxPhase(e.ns.Name, ref.ResourceName, openshellv1.SandboxPhase_SANDBOX_PHASE_STOPPED, nil); err != nil {
		t.Fatal(err)
	}
	_, err = d.ProvisionHarness(e.ctx, h)
	if err == nil || err.Error() != "OpenShell Sandbox "+ref.ResourceName+" has stopped; remove the stale Sandbox before retrying." {
		t.Fatalf("stopped: %v", err)
	}
	if err := e.gw.SetSandboxPhase(e.ns.Name, ref.ResourceName, openshellv1.SandboxPhase_SANDBOX_PHASE_DELETING, nil); err != nil {
		t.Fatal(err)
	}
	_, err = d.ProvisionHarness(e.ctx, h)
	if err == nil || err.Error() != "OpenShell Sandbox "+ref.ResourceName+" is being deleted; it can be created again once deletion finishes." {
		t.Fatalf("deleting: %v", err)
	}
}

// A lost CreateSandbox response converges: the retry with the same request_id is answered by
// the replay, there is one Sandbox and one Harness Pod, and the Codex route is verified.
func TestProvisionLostCreateResponse(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	e.gw.Inject(emulator.Fault{Method: "CreateSandbox", Kind: emulator.FaultDropResponse})
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	calls := e.gw.Journal().Method("CreateSandbox")
	if len(calls) != 2 || !calls[1].Replayed {
		t.Fatalf("CreateSandbox calls %+v", calls)
	}
	pods, err := e.admin.CoreV1().Pods(e.ns.Name).List(e.ctx, metav1.ListOptions{LabelSelector: driver.LabelRevision + "=" + h.Revision.ID})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != ref.ResourceName {
		t.Fatalf("Harness Pods %v, %v", pods, err)
	}
}

// `occ sandbox provision` right after the pinned Gateway became ready, while it drops its
// in-flight requests: the first call of the flow and the first two CreateSandbox attempts lose
// their connection after the Gateway executed them. Every call is retried, CreateSandbox with
// the same request_id, and exactly one Sandbox and one Harness Pod exist.
func TestProvisionRidesOutStartupDrops(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	e.gw.Journal().Reset()
	// Three dropped connections at most, fewer than the client's four attempts, whichever calls
	// they hit in flight.
	e.gw.Inject(emulator.Fault{Method: "CreateSandbox", Kind: emulator.FaultDropConnection, AfterCommit: true, Count: 2})
	e.gw.Inject(emulator.Fault{Kind: emulator.FaultDropConnection, AfterCommit: true, Count: 1})
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatalf("provision across the startup drops: %v", err)
	}
	dropped := 0
	for _, c := range e.gw.Journal().Calls() {
		if c.Fault == emulator.FaultDropConnection {
			dropped++
		}
	}
	if dropped != 3 {
		t.Fatalf("%d calls lost their connection, want the 3 injected", dropped)
	}
	creates := e.gw.Journal().Method("CreateSandbox")
	if len(creates) < 3 || !creates[len(creates)-1].Replayed {
		t.Fatalf("CreateSandbox calls %+v, want two dropped attempts and an answered replay", creates)
	}
	for _, c := range creates {
		if c.Request.(*openshellv1.CreateSandboxRequest).GetRequestId() != creates[0].Request.(*openshellv1.CreateSandboxRequest).GetRequestId() {
			t.Fatalf("CreateSandbox attempts used different request_ids: %+v", creates)
		}
	}
	pods, err := e.admin.CoreV1().Pods(e.ns.Name).List(e.ctx, metav1.ListOptions{LabelSelector: driver.LabelRevision + "=" + h.Revision.ID})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != ref.ResourceName {
		t.Fatalf("Harness Pods %v, %v; want exactly the one of %s", pods, err, ref.ResourceName)
	}
}

// The gateway's durable admission limit becomes the coded, retryable
// SANDBOX_ADMISSION_LIMIT_REACHED.
func TestProvisionAdmissionLimit(t *testing.T) {
	e := newEnv(t, envOptions{gateway: emulator.Options{AdmissionLimit: 4}})
	d := e.driver(nil)
	// CreateWorkspace and CreateProvider hold two admissions; the runtime profile import and
	// the runtime provider take the other two, so CreateSandbox is the call refused.
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	_, err := d.ProvisionHarness(e.ctx, h)
	if driver.CodeOf(err) != driver.CodeAdmissionLimitReached || !driver.IsRetryable(err) ||
		!strings.HasPrefix(err.Error(), "OpenShell refused CreateSandbox: the caller reached its limit of 1000 durable request admissions.") {
		t.Fatalf("err = %v (code %q)", err, driver.CodeOf(err))
	}
}

// Codex ends with exactly its bearer-passthrough app-server route on APP_SERVER_PORT.
func TestProvisionCodexRouteChecked(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := e.client.GetService(e.ctx, e.ns.Name, ref.ResourceName, "")
	if err != nil || ep.TargetPort != 4500 || ep.AuthorizationMode != gateway.AuthorizationBearerPassthrough {
		t.Fatalf("app-server route %+v, %v", ep, err)
	}
	if _, err := e.admin.CoreV1().Pods(e.ns.Name).Get(e.ctx, ref.ResourceName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Fatal("no Harness Pod")
	}
}

// urlRewriter is a gateway whose CreateSandbox answer carries other service URLs, standing in
// for a misbehaving or different gateway build.
type urlRewriter struct {
	*gateway.Client
	urls map[string]string
}

func (u urlRewriter) CreateSandbox(ctx context.Context, req gateway.CreateSandboxRequest) (*gateway.CreateSandboxResult, error) {
	res, err := u.Client.CreateSandbox(ctx, req)
	if err == nil && res.Created {
		res.ServiceURLs = u.urls
	}
	return res, err
}

// A returned URL for native OpenClaw (which must accept no inbound traffic) and a Codex URL with
// credentials in it are both errors.
func TestProvisionRejectsUnexpectedServiceURLs(t *testing.T) {
	cases := []struct {
		harness string
		urls    map[string]string
		want    string
	}{
		{driver.HarnessOpenClaw, map[string]string{"": "http://x.openshell.localhost/"}, "OpenShell exposed an unexpected service for the native OpenClaw Harness."},
		{driver.HarnessCodex, map[string]string{"": "http://user:secret@x.openshell.localhost/"}, "OpenShell Harness service URL must be an HTTP origin without credentials, query, or fragment."},
		{driver.HarnessCodex, map[string]string{"": "http://x.openshell.localhost/?token=1"}, "OpenShell Harness service URL must be an HTTP origin without credentials, query, or fragment."},
	}
	for _, tc := range cases {
		t.Run(tc.harness+" "+tc.urls[""], func(t *testing.T) {
			e := newEnv(t, envOptions{})
			opts := testOptions(t, nil)
			opts.Gateway = urlRewriter{Client: e.client, urls: tc.urls}
			d, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			e.prepare(d)
			_, err = d.ProvisionHarness(e.ctx, e.attach(d, e.hctx(tc.harness)))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error repeats URL credentials: %v", err)
			}
		})
	}
}
