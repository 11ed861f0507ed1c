package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"helm.sh/helm/v3/pkg/action"

	"github.com/openclaw/occ/internal/syncbuf"
	"github.com/openclaw/occ/internal/testbed"
)

// The four credentials are 24 random bytes each, written as 48 lower-case hex characters, and
// differ from each other.
func TestGeneratedCredentialsAreRandomHex(t *testing.T) {
	c, err := GenerateCredentials(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range []Secret{c.PostgresPassword, c.MigratorPassword, c.ApplicationPassword, c.AuthSecret} {
		if !hex48.MatchString(s.Reveal()) {
			t.Errorf("credential %q is not 48 lower-case hex", s.Reveal())
		}
		seen[s.Reveal()] = true
	}
	if len(seen) != 4 {
		t.Errorf("the four credentials are not distinct")
	}
	if _, err := GenerateCredentials(strings.NewReader("short")); err == nil {
		t.Error("a failing random source produced credentials")
	}
}

// A developer (or a future log line) prints the credentials by mistake, with any verb or as
// JSON: only the placeholder comes out.
func TestCredentialsNeverPrint(t *testing.T) {
	c, err := GenerateCredentials(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Join([]string{
		fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s %q %x", c, c, c, c.AuthSecret, c.AuthSecret, c.AuthSecret),
		fmt.Sprintf("%v", *c), string(j), fmt.Errorf("wrapped: %v", c.PostgresPassword).Error(),
	}, "\n")
	for _, s := range []Secret{c.PostgresPassword, c.MigratorPassword, c.ApplicationPassword, c.AuthSecret} {
		if strings.Contains(out, s.Reveal()) {
			t.Fatalf("a credential was printed:\n%s", out)
		}
	}
	if !strings.Contains(out, redacted) {
		t.Fatalf("the placeholder is missing:\n%s", out)
	}
}

// Secrets canary: `up` of the Kubernetes-only profile runs with credentials that carry a known
// marker. The marker reaches the cluster's Secrets (so it is really used) and nowhere else:
// not the recorded state, Helm's progress log, the Helm release (values and manifests), the
// step descriptions, a printed control plane, or the errors of a run that fails after the
// credentials exist.
func TestCredentialsStayInTheClusterSecrets(t *testing.T) {
	b := newBed(t)
	b.uninstallAtEnd()
	ctx := context.Background()
	var helmLog syncbuf.Buffer
	logf := func(format string, args ...any) { fmt.Fprintf(&helmLog, format+"\n", args...) }
	cp, _, _ := b.newControlPlane(&testbed.CanaryRandom{}, logf)
	if err := cp.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}

	boot, err := b.client.CoreV1().Secrets(b.ns).Get(ctx, PostgresBootstrapSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(boot.Data[PostgresPasswordKey]), testbed.CanaryHex) {
		t.Fatalf("the canary source was not used: password %q", boot.Data[PostgresPasswordKey])
	}

	var places []string
	add := func(what, text string) { places = append(places, what+":\n"+text) }
	add("recorded state", b.stateJSON(t))
	add("Helm log", helmLog.String())
	cfg := new(action.Configuration)
	if err := cfg.Init(b.helm(), b.ns, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	rel, err := action.NewGet(cfg).Run(ReleaseName)
	if err != nil {
		t.Fatal(err)
	}
	relJSON, _ := json.Marshal(rel)
	add("Helm release", string(relJSON))
	var steps strings.Builder
	for _, s := range Steps() {
		d := s.Describe(cp.cfg)
		steps.WriteString(s.Name + " " + strings.Join(d.Creates, " ") + " " + d.Note + "\n")
	}
	add("step descriptions", steps.String())
	add("printed control plane", fmt.Sprintf("%+v %#v %+v %#v", cp, cp, *cp.credentials, *cp.credentials))

	// A run that fails after the credentials exist: the Installation file is gone.
	failing, installation, _ := b.newControlPlane(&testbed.CanaryRandom{}, logf)
	removeFile(t, installation)
	if err := failing.Up(ctx); err == nil {
		t.Fatal("Up succeeded without its Installation file")
	} else {
		add("error", err.Error())
	}
	// A run refused because the bootstrap Secret was edited.
	current, err := b.client.CoreV1().Secrets(b.ns).Get(ctx, PostgresBootstrapSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edited := current.DeepCopy()
	edited.Data[PostgresInitKey] = append([]byte("-- edited\n"), bytes.ReplaceAll(boot.Data[PostgresInitKey], []byte("NOSUPERUSER"), []byte("SUPERUSER"))...)
	if _, err := b.client.CoreV1().Secrets(b.ns).Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused, _, _ := b.newControlPlane(&testbed.CanaryRandom{}, logf)
	if err := refused.Up(ctx); err == nil {
		t.Fatal("Up accepted an edited bootstrap Secret")
	} else {
		add("error", err.Error())
	}

	for _, p := range places {
		if strings.Contains(p, testbed.CanaryHex) {
			t.Errorf("a generated credential leaked into the %s", p)
		}
	}
}

func removeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// Another tool's Secret of the same name is there already: the run refuses it before creating
// anything, and says so.
func TestForeignBootstrapSecretIsRefused(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PostgresBootstrapSecret, Namespace: b.ns}, Data: map[string][]byte{"password": []byte("theirs")}}
	if _, err := b.client.CoreV1().Secrets(b.ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp, _, _ := b.newControlPlane(nil, nil)
	err := cp.Up(ctx)
	if err == nil || !strings.Contains(err.Error(), "is not owned by this development state") || strings.Contains(err.Error(), "theirs") {
		t.Fatalf("Up with a foreign %s: %v", PostgresBootstrapSecret, err)
	}
	if objs := b.dir.State().Objects; len(objs) != 0 {
		t.Errorf("objects were recorded before the refusal: %v", objs)
	}
	if _, err := b.client.CoreV1().PersistentVolumeClaims(b.ns).Get(ctx, PostgresDataClaim, metav1.GetOptions{}); err == nil {
		t.Error("a PVC was created after the refusal")
	}
}
