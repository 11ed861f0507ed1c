package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"

	"github.com/openclaw/occ/internal/fsutil"
)

// File names in the state directory, the ones OCE's launcher uses there.
const (
	// KeyFileName is the helper-owned key destination when --key-output is not given.
	KeyFileName = "initial-admin-service-key.json"
	// KeyCopyName is the temporary copy of the key read from the bootstrap output; it exists
	// only while the key is verified.
	KeyCopyName = "bootstrap-key-copy.json"
)

// FlagKeyOutput is the flag that chooses where the verified key is written.
const FlagKeyOutput = "--key-output"

// KeyDestination is where the verified key is written.
type KeyDestination struct {
	// Path is absolute and canonical.
	Path string
	// Owned is true when occ chose the path (inside the state directory), so `down` may delete
	// it with the directory; a user's --key-output is never deleted by `down`.
	Owned bool
}

// KeyOutputError is a --key-output value refused before anything is created.
type KeyOutputError struct {
	Value string
	// Rule is the rule that failed, in the reference's words where it has them.
	Rule string
	// Fix says what to do instead.
	Fix string
}

func (e *KeyOutputError) Error() string {
	return fmt.Sprintf("%s %q: %s; %s", FlagKeyOutput, e.Value, e.Rule, e.Fix)
}

// ResolveKeyDestination returns the key destination: keyOutput when the user gave one (checked
// with ValidateKeyOutput), else <stateDir>/initial-admin-service-key.json, owned by occ.
func ResolveKeyDestination(keyOutput, stateDir string) (KeyDestination, error) {
	if keyOutput == "" {
		if !filepath.IsAbs(stateDir) {
			return KeyDestination{}, fmt.Errorf("key destination: state directory %q is not absolute", stateDir)
		}
		return KeyDestination{Path: filepath.Join(filepath.Clean(stateDir), KeyFileName), Owned: true}, nil
	}
	if err := ValidateKeyOutput(keyOutput); err != nil {
		return KeyDestination{}, err
	}
	return KeyDestination{Path: keyOutput}, nil
}

// ValidateKeyOutput applies the reference's rules to a user-chosen key path, before anything is
// created: absolute and canonical (no ".", "..", duplicate or trailing separators), absent, in
// an existing parent directory that is reached without symlinks and that is private to the
// current user (so nobody else can read the key or swap the directory under it).
func ValidateKeyOutput(p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
		return &KeyOutputError{Value: p, Rule: "key output must be an absent absolute canonical path",
			Fix: "pass an absolute path without \".\", \"..\" or trailing slashes, such as " + filepath.Join("/home/you/.config/occ", KeyFileName)}
	}
	if _, err := os.Lstat(p); err == nil {
		return &KeyOutputError{Value: p, Rule: "key output already exists: " + p,
			Fix: "occ never overwrites a key file; choose a new path or move the old file away"}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return &KeyOutputError{Value: p, Rule: fmt.Sprintf("key output cannot be examined: %v", err), Fix: "choose a path in a directory you own"}
	}
	parent := filepath.Dir(p)
	resolved, err := filepath.EvalSymlinks(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return &KeyOutputError{Value: p, Rule: "key output parent " + parent + " does not exist",
			Fix: "create it first with mkdir -m 700 " + parent}
	}
	if err != nil {
		return &KeyOutputError{Value: p, Rule: fmt.Sprintf("key output parent %s cannot be examined: %v", parent, err), Fix: "choose a path in a directory you own"}
	}
	if resolved != parent {
		return &KeyOutputError{Value: p, Rule: "key output parent must not contain symlinks (" + parent + " resolves to " + resolved + ")",
			Fix: "pass " + filepath.Join(resolved, filepath.Base(p)) + " instead"}
	}
	fi, err := os.Lstat(parent)
	if err != nil {
		return &KeyOutputError{Value: p, Rule: fmt.Sprintf("key output parent %s cannot be examined: %v", parent, err), Fix: "choose a path in a directory you own"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		uid := -1
		if ok {
			uid = int(st.Uid)
		}
		return &KeyOutputError{Value: p,
			Rule: fmt.Sprintf("key output parent %s must be a private directory owned by the current user (found mode %#o, uid %d; want no group or other permissions and uid %d)", parent, fi.Mode().Perm(), uid, os.Geteuid()),
			Fix:  "use a directory made with mkdir -m 700, or chmod 700 " + parent + " if it is yours"}
	}
	return nil
}

// KeyFileMode is the permission bits of the service key file WriteServiceKey writes.
const KeyFileMode = 0o600

// WriteServiceKey writes the key file to dest with O_EXCL at 0600, refusing symlinks, and makes
// it durable (file and directory synced). A write error removes the partial file, so a retry is
// never blocked by it. An existing file is never replaced.
func WriteServiceKey(dest KeyDestination, key *ServiceKey) error {
	f, err := os.OpenFile(dest.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, KeyFileMode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("write service key: key output already exists: %s; occ never overwrites a key file", dest.Path)
	}
	if err != nil {
		return fmt.Errorf("write service key to %s: %w", dest.Path, err)
	}
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(dest.Path)
		return fmt.Errorf("write service key to %s: %w", dest.Path, err)
	}
	if _, err := f.Write(key.raw); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(dest.Path)
		return fmt.Errorf("write service key to %s: %w", dest.Path, err)
	}
	if err := fsutil.SyncDir(filepath.Dir(dest.Path)); err != nil {
		return fmt.Errorf("write service key to %s: sync directory: %w", dest.Path, err)
	}
	return nil
}

// KeySource writes the bootstrap key file's bytes to w. Each profile has its own: the Compose
// profile reads the bootstrap container's volume through the Docker archive API, the
// Kubernetes-only profile reads the bootstrap PVC through a reader Pod.
type KeySource func(ctx context.Context, w io.Writer) error

// InstallKeyOptions are the inputs of InstallServiceKey.
type InstallKeyOptions struct {
	// StateDir is the private state directory; the temporary copy lives there.
	StateDir string
	// Destination is where the verified key goes (ResolveKeyDestination).
	Destination KeyDestination
	// APIURL is the OCC origin the key is verified against.
	APIURL string
	// Read fetches the key file from the bootstrap output.
	Read KeySource
	// Client is the HTTP client for the verification; nil means NewAPIClient(APITimeout).
	Client *http.Client
}

// InstalledKey describes a verified, written key file (never its content).
type InstalledKey struct {
	Path           string
	Owned          bool
	InstallationID string
}

// InstallServiceKey copies the bootstrap key into a private temporary file in the state
// directory, parses it, verifies it against the live Installation and only then writes it to
// its destination. The temporary copy is removed whatever happens. A key that fails
// verification is never written anywhere the user would use it.
func InstallServiceKey(ctx context.Context, opts InstallKeyOptions) (InstalledKey, error) {
	if opts.Read == nil {
		return InstalledKey{}, errors.New("install service key: no key source")
	}
	if opts.Destination.Path == "" {
		return InstalledKey{}, errors.New("install service key: no destination")
	}
	tmp := filepath.Join(opts.StateDir, KeyCopyName)
	// A copy left by a run that died mid-way is ours (the state directory is private and
	// locked), and stale: remove it so the exclusive create below can succeed.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return InstalledKey{}, fmt.Errorf("install service key: remove stale copy %s: %w", tmp, err)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return InstalledKey{}, fmt.Errorf("install service key: create temporary copy: %w", err)
	}
	defer func() {
		_ = f.Close()
		_ = os.Remove(tmp)
	}()
	if err := opts.Read(ctx, &fsutil.LimitWriter{W: f, Left: maxKeyFileBytes, TooLarge: fmt.Errorf("bootstrap service key is larger than %d bytes; it is not a key file", maxKeyFileBytes)}); err != nil {
		return InstalledKey{}, fmt.Errorf("read bootstrap service key: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return InstalledKey{}, fmt.Errorf("install service key: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return InstalledKey{}, fmt.Errorf("install service key: read temporary copy: %w", err)
	}
	key, err := ParseServiceKey(data)
	if err != nil {
		return InstalledKey{}, err
	}
	inst, err := VerifyServiceKey(ctx, key, VerifyKeyOptions{APIURL: opts.APIURL, Client: opts.Client})
	if err != nil {
		return InstalledKey{}, err
	}
	if err := WriteServiceKey(opts.Destination, key); err != nil {
		return InstalledKey{}, err
	}
	return InstalledKey{Path: opts.Destination.Path, Owned: opts.Destination.Owned, InstallationID: inst.ID}, nil
}

// KeyInstaller is InstallServiceKey for a caller that has already read the key file's bytes
// (the Kubernetes-only profile reads them through a reader Pod). Its VerifyAndWrite keeps the
// same guarantees: a private temporary copy in the state directory, verification against the
// live Installation, an exclusive 0600 write, the copy removed.
type KeyInstaller struct {
	StateDir    string
	Destination KeyDestination
	APIURL      string
	Client      *http.Client
}

// VerifyAndWrite verifies key and writes it to the destination, returning the Installation ID.
func (k KeyInstaller) VerifyAndWrite(ctx context.Context, key []byte) (string, error) {
	got, err := InstallServiceKey(ctx, InstallKeyOptions{
		StateDir:    k.StateDir,
		Destination: k.Destination,
		APIURL:      k.APIURL,
		Client:      k.Client,
		Read: func(_ context.Context, w io.Writer) error {
			_, err := w.Write(key)
			return err
		},
	})
	return got.InstallationID, err
}
