package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// canary is the secret of every key in these tests; it must appear nowhere but key files.
const canary = "occ_sk_CANARY-7d1f0c2e9b4a"

func keyJSON(installationID, key string) string {
	return fmt.Sprintf(`{"data":{"id":"sk_1","servicePrincipalId":"sp_1","name":"bootstrap-admin","expiresAt":"2027-01-01T00:00:00.000Z","key":%q},"meta":{"installationId":%q}}`+"\n", key, installationID)
}

// occStandin answers GET /installation like OCC: the key in x-api-key, any Authorization header
// refused, data.id the Installation.
type occStandin struct {
	*httptest.Server
	installationID string
	key            string
	hits           atomic.Int32
	// echo makes error answers quote the presented key, as a careless proxy might.
	echo bool
}

func newOCCStandin(t *testing.T, installationID, key string) *occStandin {
	o := &occStandin{installationID: installationID, key: key}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"code":"UNAUTHENTICATED","message":"Controller API bearer authentication is disabled."}}`)
			return
		}
		if got := r.Header.Get(ServiceKeyHeader); got != o.key {
			w.WriteHeader(http.StatusUnauthorized)
			msg := "The service key is not valid."
			if o.echo {
				msg += " (got " + got + ")"
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "UNAUTHENTICATED", "message": msg}})
			return
		}
		if r.URL.Path != "/installation" {
			http.NotFound(w, r)
			return
		}
		_, _ = fmt.Fprintf(w, `{"data":{"id":%q,"name":"OpenClaw Local Development","createdAt":"2026-12-01T00:00:00Z"},"meta":{"requestId":"r1"}}`, o.installationID)
	}))
	t.Cleanup(o.Close)
	return o
}

func noCanary(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, canary) {
			t.Errorf("the key appears in %q", s)
		}
	}
}

// The key file's two required members are checked with the reference's message, and no error
// quotes the file (which holds the secret).
func TestParseServiceKey(t *testing.T) {
	k, err := ParseServiceKey([]byte(keyJSON("ins_a", canary)))
	if err != nil || k.InstallationID() != "ins_a" {
		t.Fatalf("%v %v", k, err)
	}
	for _, c := range []struct{ name, data, want string }{
		{"no key", `{"data":{},"meta":{"installationId":"ins_a"}}`, "bootstrap service key is missing its key or Installation ID"},
		{"blank key", `{"data":{"key":"  "},"meta":{"installationId":"ins_a"}}`, "bootstrap service key is missing its key or Installation ID"},
		{"no Installation ID", `{"data":{"key":"` + canary + `"},"meta":{}}`, "bootstrap service key is missing its key or Installation ID"},
		{"line break", `{"data":{"key":"` + canary + `\r\n"},"meta":{"installationId":"ins_a"}}`, "line break in data.key"},
		{"not JSON", canary, "not a JSON document (syntax error at byte"},
		{"wrong shape", `{"data":"` + canary + `"}`, "not a JSON document of the expected shape"},
		{"huge", strings.Repeat(" ", maxKeyFileBytes+1), "larger than"},
	} {
		_, err := ParseServiceKey([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
			continue
		}
		noCanary(t, err.Error())
	}
}

// However a key is printed or encoded (value or pointer, any verb, JSON), only its Installation
// ID shows.
func TestServiceKeyNeverFormatsTheSecret(t *testing.T) {
	k, err := ParseServiceKey([]byte(keyJSON("ins_a", canary)))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(k)
	jsv, _ := json.Marshal(*k)
	wrapped := fmt.Errorf("step: %v", k)
	texts := []string{fmt.Sprint(k), fmt.Sprint(*k), fmt.Sprintf("%+v %#v %s %q %x", k, k, k, k, k), fmt.Sprintf("%+v %#v", *k, *k), string(js), string(jsv), wrapped.Error(),
		fmt.Sprintf("%v", struct{ K *ServiceKey }{k}), fmt.Sprintf("%+v", []ServiceKey{*k})}
	noCanary(t, texts...)
	if !strings.Contains(texts[0], "ins_a") {
		t.Errorf("the Installation ID should show: %q", texts[0])
	}
}

// GET /installation with the key: a matching Installation passes; another Installation's ID is
// the reference's mismatch; a refused key, a redirect (not followed) and a hung server are
// "Installation authorization failed: …"; none of them shows the key, even when the server
// echoes it.
func TestVerifyServiceKey(t *testing.T) {
	ctx := context.Background()
	key, _ := ParseServiceKey([]byte(keyJSON("ins_a", canary)))
	good := newOCCStandin(t, "ins_a", canary)
	inst, err := VerifyServiceKey(ctx, key, VerifyKeyOptions{APIURL: good.URL})
	if err != nil || inst.ID != "ins_a" {
		t.Fatalf("%+v %v", inst, err)
	}

	other := newOCCStandin(t, "ins_b", canary)
	_, err = VerifyServiceKey(ctx, key, VerifyKeyOptions{APIURL: other.URL})
	if err == nil || !strings.HasPrefix(err.Error(), "Installation ID does not match the bootstrap service key") || !strings.Contains(err.Error(), "ins_a") || !strings.Contains(err.Error(), "ins_b") {
		t.Fatalf("mismatch: %v", err)
	}
	noCanary(t, err.Error())

	refusing := newOCCStandin(t, "ins_a", "some-other-key")
	refusing.echo = true
	_, err = VerifyServiceKey(ctx, key, VerifyKeyOptions{APIURL: refusing.URL})
	if err == nil || !strings.HasPrefix(err.Error(), "Installation authorization failed: OCC operation failed (HTTP 401): UNAUTHENTICATED") {
		t.Fatalf("refused key: %v", err)
	}
	noCanary(t, err.Error())

	redirect := httptest.NewServer(http.RedirectHandler(good.URL+"/installation", http.StatusFound))
	t.Cleanup(redirect.Close)
	before := good.hits.Load()
	_, err = VerifyServiceKey(ctx, key, VerifyKeyOptions{APIURL: redirect.URL})
	if err == nil || !strings.Contains(err.Error(), "redirects are not followed") || good.hits.Load() != before {
		t.Fatalf("redirect: %v (target hit %d times)", err, good.hits.Load()-before)
	}

	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hung.Close)
	_, err = VerifyServiceKey(ctx, key, VerifyKeyOptions{APIURL: hung.URL, Client: NewAPIClient(200 * time.Millisecond)})
	if err == nil || !strings.HasPrefix(err.Error(), "Installation authorization failed:") || !strings.Contains(err.Error(), "Timeout") {
		t.Fatalf("hung server: %v", err)
	}
	noCanary(t, err.Error())

	if _, err := VerifyServiceKey(ctx, key, VerifyKeyOptions{APIURL: "http://user:pw@127.0.0.1:1/api"}); err == nil || !strings.Contains(err.Error(), "OCC URL must be an origin without credentials, a path, a query, or a fragment") || strings.Contains(err.Error(), "pw@") {
		t.Fatalf("bad origin: %v", err)
	}
}

// A user's --key-output is checked before anything is created: absolute and canonical, absent,
// in an existing private directory reached without symlinks. Each refusal says what to do.
func TestValidateKeyOutput(t *testing.T) {
	private := canonical(t, t.TempDir())
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(private, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(private, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(private, "old.json")
	write(t, existing, "{}")
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ValidateKeyOutput(filepath.Join(private, "key.json")); err != nil {
		t.Fatalf("a fresh path in a private directory: %v", err)
	}
	for _, c := range []struct{ path, want string }{
		{"key.json", "key output must be an absent absolute canonical path"},
		{private + "/sub/../key.json", "key output must be an absent absolute canonical path"},
		{private + "/key.json/", "key output must be an absent absolute canonical path"},
		{existing, "key output already exists: " + existing},
		{filepath.Join(private, "nowhere", "key.json"), "does not exist; create it first with mkdir -m 700"},
		{filepath.Join(link, "key.json"), "key output parent must not contain symlinks"},
		{filepath.Join(open, "key.json"), "must be a private directory owned by the current user (found mode 0755"},
	} {
		err := ValidateKeyOutput(c.path)
		var ke *KeyOutputError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), FlagKeyOutput) {
			t.Errorf("%s: got %v, want %q", c.path, err, c.want)
		}
	}
	d, err := ResolveKeyDestination("", "/state")
	if err != nil || d != (KeyDestination{Path: "/state/" + KeyFileName, Owned: true}) {
		t.Fatalf("helper-owned destination: %+v %v", d, err)
	}
}

// The key goes from the bootstrap output through a private temporary copy to its destination
// only once verified; the copy is gone afterwards whatever happened, a stale copy from a
// crashed run does not block, an existing destination is never replaced, and the secret shows
// in no error.
func TestInstallServiceKey(t *testing.T) {
	ctx := context.Background()
	state := canonical(t, t.TempDir())
	occ := newOCCStandin(t, "ins_a", canary)
	source := func(content string) KeySource {
		return func(_ context.Context, w io.Writer) error { _, err := io.WriteString(w, content); return err }
	}
	copyGone := func() {
		t.Helper()
		if _, err := os.Stat(filepath.Join(state, KeyCopyName)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("temporary copy left behind: %v", err)
		}
	}
	write(t, filepath.Join(state, KeyCopyName), "stale copy of a crashed run")
	dest := KeyDestination{Path: filepath.Join(state, KeyFileName), Owned: true}
	got, err := InstallServiceKey(ctx, InstallKeyOptions{StateDir: state, Destination: dest, APIURL: occ.URL, Read: source(keyJSON("ins_a", canary))})
	if err != nil {
		t.Fatal(err)
	}
	copyGone()
	if got != (InstalledKey{Path: dest.Path, Owned: true, InstallationID: "ins_a"}) {
		t.Fatalf("installed %+v", got)
	}
	fi, err := os.Stat(dest.Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", err, fi.Mode())
	}
	if b, _ := os.ReadFile(dest.Path); string(b) != keyJSON("ins_a", canary) {
		t.Fatalf("key file holds %q, not bootstrap's bytes", b)
	}

	var errs []string
	// An existing destination is kept as it is.
	_, err = InstallServiceKey(ctx, InstallKeyOptions{StateDir: state, Destination: dest, APIURL: occ.URL, Read: source(keyJSON("ins_a", canary))})
	if err == nil || !strings.Contains(err.Error(), "key output already exists") {
		t.Fatalf("existing destination: %v", err)
	}
	errs = append(errs, err.Error())
	copyGone()

	userDest := KeyDestination{Path: filepath.Join(state, "user-key.json")}
	for _, c := range []struct {
		name string
		read KeySource
		want string
	}{
		{"mismatch", source(keyJSON("ins_other", canary)), "Installation ID does not match the bootstrap service key"},
		{"refused key", source(keyJSON("ins_a", canary+"x")), "Installation authorization failed: OCC operation failed (HTTP 401)"},
		{"missing member", source(`{"data":{"key":"` + canary + `"},"meta":{}}`), "bootstrap service key is missing its key or Installation ID"},
		{"source fails", func(context.Context, io.Writer) error { return errors.New("could not identify bootstrap container") }, "read bootstrap service key: could not identify bootstrap container"},
		{"oversized", source(strings.Repeat("x", maxKeyFileBytes+10)), "larger than"},
	} {
		_, err := InstallServiceKey(ctx, InstallKeyOptions{StateDir: state, Destination: userDest, APIURL: occ.URL, Read: c.read})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
			continue
		}
		errs = append(errs, err.Error())
		if _, statErr := os.Stat(userDest.Path); !errors.Is(statErr, fs.ErrNotExist) {
			t.Errorf("%s: the destination was written", c.name)
		}
		copyGone()
	}
	noCanary(t, errs...)
}
