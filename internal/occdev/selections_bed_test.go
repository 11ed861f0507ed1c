package occdev_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/occdevtest"
	"github.com/openclaw/occ/internal/occdev/state"
)

// An OpenShell engineer, offline, brings the platform up from the charts of their own checkout
// and a local copy of the Agent Sandbox manifest: no archive and no manifest is downloaded, the
// Gateway chart (with its Agent Sandbox preflight on) passes the offline check and the live
// install, the state records the selections with the manifest's digest, `status` shows them,
// and `down` removes everything.
func TestUpFromSelectedChartsAndManifest(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	gw, ws := chartstest.WriteCharts(t, t.TempDir(), nil)
	manifest := filepath.Join(t.TempDir(), "sandbox.yaml")
	data := occdevtest.AgentSandboxManifest(b.Suffix)
	if err := os.WriteFile(manifest, data, 0o600); err != nil {
		t.Fatal(err)
	}
	progress := &recordedProgress{}
	opts := b.Options()
	opts.ArchiveFile, opts.GatewayChart, opts.WorkspaceChart, opts.AgentSandboxManifest = "", gw, ws, manifest
	opts.Progress = progress.sink
	if _, err := occdev.Up(ctx, opts); err != nil {
		t.Fatalf("up: %v\nprogress:\n%s", err, strings.Join(progress.lines, "\n"))
	}
	t.Cleanup(func() { _, _ = occdev.Down(context.Background(), occdev.DownOptions{StateDir: b.StateDir}) })
	lines := strings.Join(progress.lines, "\n")
	for _, want := range []string{"Use the selected Gateway and Workspace charts [artifacts]", "Read the selected Agent Sandbox manifest [artifacts]", "Check the images of the rendered Gateway chart [artifacts]"} {
		if !strings.Contains(lines, want) {
			t.Errorf("progress lacks %q:\n%s", want, lines)
		}
	}
	if strings.Contains(lines, "source archive") || b.Downloads.Get() != 0 {
		t.Errorf("the archive or the manifest was fetched (%d downloads):\n%s", b.Downloads.Get(), lines)
	}
	sum := sha256.Sum256(data)
	want := state.Selections{GatewayChart: gw, WorkspaceChart: ws, AgentSandboxManifest: manifest, AgentSandboxManifestSHA256: hex.EncodeToString(sum[:])}
	st, err := state.Read(b.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Selections == nil || *st.Selections != want {
		t.Errorf("recorded selections %+v, want %+v", st.Selections, want)
	}
	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: b.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	if status.Selections == nil || *status.Selections != want {
		t.Errorf("status selections %+v", status.Selections)
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory still exists after down: %v", err)
	}
}

// A manifest without the Agent Sandbox CRDs is caught before anything is installed: the Gateway
// chart's own preflight fails the offline render, occ names the API versions the cluster would
// not serve, and the rollback leaves no state directory and nothing in the cluster.
func TestUpRefusesAManifestWithoutTheAgentSandboxCRDs(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	var kept []string
	for _, doc := range strings.Split(string(occdevtest.AgentSandboxManifest(b.Suffix)), "---\n") {
		if !strings.Contains(doc, "kind: CustomResourceDefinition") {
			kept = append(kept, doc)
		}
	}
	manifest := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(manifest, []byte(strings.Join(kept, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := b.Options()
	opts.AgentSandboxManifest = manifest
	_, err := occdev.Up(ctx, opts)
	if err == nil {
		t.Fatal("up succeeded without the Agent Sandbox CRDs")
	}
	for _, want := range []string{
		"Check the images of the rendered Gateway chart", "agent-sandbox-preflight.yaml", "Agent Sandbox is required",
		"the cluster would not serve these API versions the chart tests for: agents.x-k8s.io/v1alpha1, agents.x-k8s.io/v1alpha1/Sandbox, agents.x-k8s.io/v1beta1, agents.x-k8s.io/v1beta1/Sandbox",
		"the Agent Sandbox manifest " + manifest + " defines no CustomResourceDefinition serving them", "rolled back",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory kept after the refusal: %v", err)
	}
	for _, ns := range []string{b.Namespace, b.AgentNS} {
		if n, err := b.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) && (err != nil || n.DeletionTimestamp == nil) {
			t.Errorf("namespace %s exists after the refusal (%v)", ns, err)
		}
	}
}
