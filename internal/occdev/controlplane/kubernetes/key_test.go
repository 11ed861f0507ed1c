package kubernetes

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev/controlplane"
)

// volumeExec stands in for exec in the reader Pod (the bed has no kubelet to run it): it answers
// the read command with the files of a stand-in bootstrap volume, checking the command is the
// one a real container would run.
type volumeExec struct {
	t     *testing.T
	files map[string]string
	mu    sync.Mutex
	calls []string
}

func (e *volumeExec) Exec(_ context.Context, namespace, pod, container string, command []string, limit int64) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if pod != ReaderPod || container != readerContainer || len(command) != 4 || command[0] != "node" || command[1] != "-e" || command[2] != readScript {
		e.t.Errorf("unexpected exec in %s/%s container %s: %q", namespace, pod, container, command)
		return nil, errors.New("unexpected command")
	}
	e.calls = append(e.calls, command[3])
	body, ok := e.files[command[3]]
	if !ok {
		return nil, errors.New("command terminated with exit code 1: ENOENT: no such file or directory, open '" + command[3] + "'")
	}
	if int64(len(body)) > limit {
		return nil, errTooLarge
	}
	return []byte(body), nil
}

// recordingVerifier stands in for the shared key code (GET /installation through the proxy).
type recordingVerifier struct {
	key []byte
	err error
}

func (v *recordingVerifier) VerifyAndWrite(_ context.Context, key []byte) (string, error) {
	v.key = key
	if v.err != nil {
		return "", v.err
	}
	return "ins_0a1b2c3d-0000-4000-8000-000000000001", nil
}

const (
	testPassword = "admin-password-canary-7f3a9c"
	testKey      = `{"data":{"key":"occ_sk_canary_91d2"},"meta":{"installationId":"ins_0a1b2c3d-0000-4000-8000-000000000001"}}`
)

func bootstrapFiles(password string) map[string]string {
	return map[string]string{
		BootstrapMountPath + "/" + PasswordFileName:   password,
		BootstrapMountPath + "/" + ServiceKeyFileName: testKey,
	}
}

func (b *bed) keyCopy(t *testing.T) KeyCopy {
	return KeyCopy{Namespace: b.ns, ControllerImage: controllerRef, PasswordFile: filepath.Join(t.TempDir(), PasswordFileName), Timeout: 30 * time.Second}
}

func (b *bed) readerGone(ctx context.Context) {
	b.t.Helper()
	p, err := b.client.CoreV1().Pods(b.ns).Get(ctx, ReaderPod, metav1.GetOptions{})
	if err == nil && p.DeletionTimestamp == nil {
		b.t.Errorf("the reader Pod %s is still there", ReaderPod)
	} else if err != nil && !apierrors.IsNotFound(err) {
		b.t.Fatal(err)
	}
}

// After the API answers, `up` copies the bootstrap output: a reader Pod mounts the bootstrap
// claim read-only, the two files are read through exec, the password lands in the state
// directory (0600), the key goes to the shared verifier, and the reader is removed.
func TestCopyBootstrapKey(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	exec := &volumeExec{t: t, files: bootstrapFiles(testPassword)}
	verifier := &recordingVerifier{}
	req := b.keyCopy(t)

	res, err := CopyBootstrapKey(ctx, b.conn, exec, verifier, req)
	if err != nil {
		t.Fatalf("CopyBootstrapKey: %v", err)
	}
	if res.InstallationID != "ins_0a1b2c3d-0000-4000-8000-000000000001" || res.AdminEmail != AdminEmail || res.PasswordFile != req.PasswordFile {
		t.Errorf("result = %+v", res)
	}
	if string(verifier.key) != testKey {
		t.Errorf("the verifier got %q", verifier.key)
	}
	fi, err := os.Stat(req.PasswordFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("password file mode %v, want 0600", fi.Mode().Perm())
	}
	if data, _ := os.ReadFile(req.PasswordFile); string(data) != testPassword {
		t.Errorf("password file holds %q", data)
	}
	reader := "v1 Pod " + b.ns + "/" + ReaderPod
	if h := strings.Join(b.history.list(), "\n"); !strings.Contains(h, "record "+reader+"\nrecord "+reader) || !strings.HasSuffix(h, "forget "+reader) {
		t.Errorf("the reader Pod was not recorded before it was created (and with its uid after), then forgotten once removed:\n%s", h)
	}
	if b.recorded("Pod", b.ns, ReaderPod) {
		t.Error("the removed reader Pod is still recorded, so down would look for it")
	}
	b.readerGone(ctx)
	if len(exec.calls) != 2 {
		t.Errorf("exec calls %v", exec.calls)
	}

	// The reader Pod as created: read-only claim, no token, the controller user.
	created := ReaderPodObject(b.ns, b.own, controllerRef)
	spec := created.Spec
	if !spec.Volumes[0].PersistentVolumeClaim.ReadOnly || spec.Volumes[0].PersistentVolumeClaim.ClaimName != BootstrapClaim || !spec.Containers[0].VolumeMounts[0].ReadOnly ||
		*spec.AutomountServiceAccountToken || *spec.SecurityContext.RunAsUser != ControllerUID || spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("reader Pod spec = %+v", spec)
	}

	// A repeated step with the same password is accepted (the file is already the same).
	if _, err := CopyBootstrapKey(ctx, b.conn, exec, &recordingVerifier{}, req); err != nil {
		t.Fatalf("repeated CopyBootstrapKey: %v", err)
	}
	b.readerGone(ctx)
}

// The key does not match the live Installation (or the API refuses it): the copy fails with the
// verifier's error, the password file it wrote is removed again, and so is the reader Pod.
// Neither the password nor the key appears in the error.
func TestCopyBootstrapKeyFailureLeavesNothing(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	req := b.keyCopy(t)
	verifier := &recordingVerifier{err: errors.New("Installation ID does not match the bootstrap service key")}
	_, err := CopyBootstrapKey(ctx, b.conn, &volumeExec{t: t, files: bootstrapFiles(testPassword)}, verifier, req)
	if err == nil || !strings.Contains(err.Error(), "Installation ID does not match the bootstrap service key") {
		t.Fatalf("CopyBootstrapKey error = %v", err)
	}
	if strings.Contains(err.Error(), testPassword) || strings.Contains(err.Error(), "occ_sk_canary") {
		t.Fatalf("the error leaks a credential: %v", err)
	}
	if _, serr := os.Stat(req.PasswordFile); !os.IsNotExist(serr) {
		t.Errorf("the password file was left behind: %v", serr)
	}
	b.readerGone(ctx)

	// An empty password file: the reference's message, and again nothing left.
	_, err = CopyBootstrapKey(ctx, b.conn, &volumeExec{t: t, files: bootstrapFiles("  \n")}, &recordingVerifier{}, req)
	if err == nil || err.Error() != "bootstrap administrator password is empty" {
		t.Fatalf("empty password: %v", err)
	}
	b.readerGone(ctx)

	// The bootstrap Job wrote no key (a re-used database): the read fails, the reader goes.
	files := bootstrapFiles(testPassword)
	delete(files, BootstrapMountPath+"/"+ServiceKeyFileName)
	_, err = CopyBootstrapKey(ctx, b.conn, &volumeExec{t: t, files: files}, &recordingVerifier{}, req)
	if err == nil || !strings.Contains(err.Error(), ServiceKeyFileName) {
		t.Fatalf("missing key file: %v", err)
	}
	b.readerGone(ctx)
}

// The reader Pod never becomes ready (its image is not in the node): the wait ends at the
// timeout and the reader is still removed.
func TestCopyBootstrapKeyReaderNeverReady(t *testing.T) {
	b := newBed(t)
	b.kubelet.pause()
	req := b.keyCopy(t)
	req.Timeout = 2 * time.Second
	_, err := CopyBootstrapKey(context.Background(), b.conn, &volumeExec{t: t}, &recordingVerifier{}, req)
	if err == nil || !strings.Contains(err.Error(), "wait for Pod "+b.ns+"/"+ReaderPod) {
		t.Fatalf("CopyBootstrapKey error = %v", err)
	}
	b.readerGone(context.Background())
}

// The production exec goes through the API server's exec subresource (client-go, no kubectl).
// The bed has no kubelet, so the API server refuses to connect the stream; that refusal proves
// the request reached pods/exec of the right Pod.
func TestAPIExecReachesTheExecSubresource(t *testing.T) {
	b := newBed(t)
	b.kubelet.pause()
	ctx := context.Background()
	b.ensure(ReaderPodObject(b.ns, b.own, controllerRef))
	e := APIExec{Config: b.config, Client: b.client}
	_, err := e.Exec(ctx, b.ns, ReaderPod, readerContainer, []string{"node", "-e", readScript, BootstrapMountPath + "/" + PasswordFileName}, 1024)
	if err == nil {
		t.Fatal("exec succeeded without a kubelet")
	}
	t.Logf("the API server's answer: %v", err)
	if !strings.Contains(err.Error(), "exec in Pod "+b.ns+"/"+ReaderPod) || !strings.Contains(err.Error(), "host") {
		t.Fatalf("exec error = %v, want the API server's refusal for a Pod without a node", err)
	}
}

// installationAPI stands in for the OCE API behind the development proxy (the bed routes no
// Service, so the proxy cannot be reached; the shared key code is driven against this seam):
// GET /installation answers the Installation id only for the expected x-api-key, as OCE does.
func installationAPI(t *testing.T, key, installationID string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet || r.URL.Path != "/installation" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"NOT_FOUND","message":"no route"}}`))
			return
		}
		if r.Header.Get(controlplane.ServiceKeyHeader) != key || r.Header.Get("Authorization") != "" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"UNAUTHENTICATED","message":"Authentication required."}}`))
			return
		}
		_, _ = w.Write([]byte(`{"data":{"id":"` + installationID + `","name":"Kubernetes development"},"meta":{}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The key copy with the shared key code of both profiles (controlplane.KeyInstaller, no stand-in
// verifier): the key read through the reader Pod is verified with GET /installation and x-api-key,
// written O_EXCL 0600 to the key destination, and the temporary copy is gone. Against an API whose
// Installation is another one, nothing is written and the reader is still removed.
func TestCopyBootstrapKeyWithTheSharedKeyInstaller(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	const id = "ins_0a1b2c3d-0000-4000-8000-000000000001"
	stateDir := t.TempDir()
	dest, err := controlplane.ResolveKeyDestination("", stateDir)
	if err != nil {
		t.Fatal(err)
	}
	api := installationAPI(t, "occ_sk_canary_91d2", id)
	installer := controlplane.KeyInstaller{StateDir: stateDir, Destination: dest, APIURL: api.URL, Client: controlplane.NewAPIClient(5 * time.Second)}
	res, err := CopyBootstrapKey(ctx, b.conn, &volumeExec{t: t, files: bootstrapFiles(testPassword)}, installer, b.keyCopy(t))
	if err != nil {
		t.Fatalf("CopyBootstrapKey: %v", err)
	}
	if res.InstallationID != id {
		t.Errorf("Installation ID %q", res.InstallationID)
	}
	fi, err := os.Stat(dest.Path)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(dest.Path); string(data) != testKey || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file %s: mode %v, content %q", dest.Path, fi.Mode().Perm(), data)
	}
	if _, err := os.Stat(filepath.Join(stateDir, controlplane.KeyCopyName)); !os.IsNotExist(err) {
		t.Errorf("the temporary key copy is still there: %v", err)
	}
	b.readerGone(ctx)

	// Another stack answers on the API port: its Installation is not the key's.
	otherDir := t.TempDir()
	otherDest, err := controlplane.ResolveKeyDestination("", otherDir)
	if err != nil {
		t.Fatal(err)
	}
	other := installationAPI(t, "occ_sk_canary_91d2", "ins_ffffffff-0000-4000-8000-000000000002")
	req := b.keyCopy(t)
	_, err = CopyBootstrapKey(ctx, b.conn, &volumeExec{t: t, files: bootstrapFiles(testPassword)},
		controlplane.KeyInstaller{StateDir: otherDir, Destination: otherDest, APIURL: other.URL}, req)
	if err == nil || !strings.Contains(err.Error(), "Installation ID does not match the bootstrap service key") || strings.Contains(err.Error(), "occ_sk_canary") {
		t.Fatalf("mismatch: %v", err)
	}
	for _, p := range []string{otherDest.Path, req.PasswordFile} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was left behind after the refused key: %v", p, err)
		}
	}
	b.readerGone(ctx)
}
