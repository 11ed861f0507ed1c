package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// runMigrate stands in for scripts/migrate-production.mjs: it reads only
// OCC_MIGRATION_DATABASE_URL, "migrates" the database as the migrator role, and logs the
// script's events.
func runMigrate() int {
	fail := func(msg string) int {
		logEvent(map[string]any{"event": "migration.failed", "code": "MIGRATION_FAILED", "message": msg})
		return 1
	}
	raw := os.Getenv("OCC_MIGRATION_DATABASE_URL")
	c, err := newDBClient(raw)
	if err != nil {
		return fail("OCC_MIGRATION_DATABASE_URL must contain the dedicated migrator credential.")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.call(ctx, http.MethodPost, "migrate", nil, nil); err != nil {
		return fail(err.Error())
	}
	logEvent(map[string]any{"event": "migration.completed"})
	return 0
}

// runBootstrap stands in for scripts/bootstrap-installation.mjs in development mode: on a fresh
// database it creates the Installation, the bootstrap service key (stored as a hash) and the
// initial Namespace "default", then writes the key file the way the real script does (private
// parent, O_EXCL|O_NOFOLLOW 0600, synced); on an existing Installation it writes nothing.
func runBootstrap() int {
	fail := func(code, msg string) int {
		logEvent(map[string]any{"event": "installation.bootstrap-failed", "code": code, "message": msg})
		return 1
	}
	mode := os.Getenv("NODE_ENV")
	if mode != "development" && mode != "production" {
		return fail("BOOTSTRAP_FAILED", "NODE_ENV must explicitly select development or production mode.")
	}
	if len(envOr("OCC_AUTH_SECRET", "openclaw-development-auth-secret-minimum-32-bytes")) < 32 {
		return fail("AUTH_SECRET_INVALID", "OCC_AUTH_SECRET must contain at least 32 characters.")
	}
	if !loopbackURL(envOr("OCC_AUTH_BASE_URL", "http://127.0.0.1:3000")) {
		return fail("AUTH_BASE_URL_INVALID", "Development OCC_AUTH_BASE_URL must identify a loopback HTTP(S) URL.")
	}
	keyFile := os.Getenv("OCC_BOOTSTRAP_SERVICE_KEY_FILE")
	if !filepath.IsAbs(keyFile) {
		return fail("BOOTSTRAP_FAILED", "OCC_BOOTSTRAP_SERVICE_KEY_FILE must identify an absolute output path.")
	}
	c, err := newDBClient(os.Getenv("OCC_DATABASE_URL"))
	if err != nil {
		return fail("DATABASE_CONFIGURATION_INVALID", "OCC_DATABASE_URL must identify a PostgreSQL database.")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.state(ctx)
	if err != nil {
		return fail("PERSISTENCE_UNAVAILABLE", err.Error())
	}
	if st.Installation != nil {
		logEvent(map[string]any{"event": "installation.already-bootstrapped"})
		return 0
	}
	if err := checkOutputParent(filepath.Dir(keyFile)); err != nil {
		return fail("BOOTSTRAP_FAILED", err.Error())
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	key := "occ_sk_" + base64.RawURLEncoding.EncodeToString(secret)
	sum := sha256.Sum256([]byte(key))
	inst := installation{ID: "ins_" + uuid.NewString(), Name: envOr("OPENCLAW_DEV_INSTALLATION_NAME", "OpenClaw Local Development"), CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	ns := occNamespc{ID: "ns_" + uuid.NewString(), Name: "default", Status: "provisioning"}
	keyID := "sk_" + uuid.NewString()
	expires := time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)
	if err := c.call(ctx, http.MethodPost, "bootstrap", map[string]any{"installation": inst, "keyHash": hex.EncodeToString(sum[:]), "namespace": ns}, nil); err != nil {
		return fail("PERSISTENCE_UNAVAILABLE", err.Error())
	}
	doc := map[string]any{
		"data": map[string]any{"id": keyID, "servicePrincipalId": "sp_" + uuid.NewString(), "name": "bootstrap-admin", "expiresAt": expires, "key": key},
		"meta": map[string]any{"installationId": inst.ID},
	}
	if err := writeExclusive(keyFile, doc); err != nil {
		return fail("BOOTSTRAP_FAILED", err.Error())
	}
	logEvent(map[string]any{"event": "installation.bootstrapped", "installationId": inst.ID, "serviceKeyFile": keyFile, "serviceKeyId": keyID, "serviceKeyExpiresAt": expires})
	return 0
}

// checkOutputParent applies the real script's rule for its output directory: a real directory,
// not a symlink, without "other" permissions, owned by us or root (or one of our groups).
func checkOutputParent(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("bootstrap output directory %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 || !ok {
		return fmt.Errorf("bootstrap output directory %s must be a real directory", dir)
	}
	if fi.Mode().Perm()&0o007 != 0 {
		return fmt.Errorf("bootstrap output directory %s must not grant other users access", dir)
	}
	if int(st.Uid) != os.Getuid() && st.Uid != 0 && int(st.Gid) != os.Getgid() {
		return fmt.Errorf("bootstrap output directory %s must be owned by the bootstrap user", dir)
	}
	return nil
}

func writeExclusive(p string, doc any) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	writeJSONLine(f, doc)
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	switch u.Hostname() {
	case "127.0.0.1", "localhost", "::1":
		return true
	}
	return false
}
