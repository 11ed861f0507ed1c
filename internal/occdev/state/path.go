package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/option"
)

// EnvDirectory is the environment variable that selects the state directory when no flag does.
const EnvDirectory = "OCC_DEVELOPMENT_STATE_DIRECTORY"

// DefaultDir is $XDG_STATE_HOME/occ/dev, or ~/.local/state/occ/dev, with symlinks in the existing
// part of the path resolved (a state directory must have a canonical parent, and home
// directories are often reached through a symlink).
func DefaultDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		// The XDG spec says relative values are invalid and must be ignored.
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return "", fmt.Errorf("default state directory: no absolute $HOME or $XDG_STATE_HOME; pass --state-dir or set %s", EnvDirectory)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return canonicalPrefix(filepath.Join(base, "occ", "dev")), nil
}

// canonicalPrefix resolves symlinks in the longest existing prefix of p and keeps the rest.
func canonicalPrefix(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if resolved, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(resolved, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// UnsafeError is a state directory refused by the safety rules; nothing was created.
type UnsafeError struct {
	Path   string
	Reason string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("refusing unsafe state directory %s: %s", e.Path, e.Reason)
}

// Unwrap is the bad setting behind e: the state directory is the user's to choose, so the CLI
// reports e as it reports every bad setting.
func (e *UnsafeError) Unwrap() error {
	return &option.Error{Option: "--state-dir (" + EnvDirectory + ")", Value: e.Path, Rule: "is refused", Fix: e.Reason}
}

// CheckPath applies the location rules of a state directory to path without creating or
// locking anything, so a bad --state-dir is reported before any other work (and by a dry run).
func CheckPath(path string) error {
	_, err := checkPath(path)
	return err
}

// checkPath applies the location rules shared by up, down and status. `up` may create the
// directory and `down` deletes it recursively, so it must never be a directory that holds
// anything else: the root, the temporary directory itself, the home directory, or the source
// checkout (a `git clean` would drop the record, and the record must not be committed).
func checkPath(p string) (string, error) {
	if p == "" {
		return "", &UnsafeError{Path: `""`, Reason: "the path is empty; pass --state-dir or set " + EnvDirectory}
	}
	if !filepath.IsAbs(p) {
		return "", &UnsafeError{Path: p, Reason: "the path must be absolute; pass an absolute --state-dir or " + EnvDirectory}
	}
	p = filepath.Clean(p)
	if p == "/" {
		return "", &UnsafeError{Path: p, Reason: "it is the filesystem root; choose a dedicated directory such as ~/.local/state/occ/dev"}
	}
	parent := filepath.Dir(p)
	resolved, err := filepath.EvalSymlinks(parent)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("state directory %s: resolve parent %s: %w", p, parent, err)
	}
	if err == nil && resolved != parent {
		return "", &UnsafeError{Path: p, Reason: fmt.Sprintf("its parent %s is reached through a symlink (it resolves to %s); state directory must have a canonical parent without symlinks, so use %s", parent, resolved, filepath.Join(resolved, filepath.Base(p)))}
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return "", &UnsafeError{Path: p, Reason: "it is a symlink; pass the directory it points to, or another path"}
	}
	type named struct{ path, what string }
	forbidden := []named{{"/tmp", "the temporary directory itself"}, {"/var/tmp", "the temporary directory itself"}, {os.TempDir(), "the temporary directory itself"}}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		forbidden = append(forbidden, named{home, "your home directory"})
	}
	for _, f := range forbidden {
		for _, candidate := range []string{filepath.Clean(f.path), canonicalPrefix(f.path)} {
			if p == candidate {
				return "", &UnsafeError{Path: p, Reason: "it is " + f.what + "; use a dedicated subdirectory such as " + filepath.Join(candidate, "occ-dev")}
			}
		}
	}
	// A home directory kept under git (a dotfiles repository) is not a source checkout: refusing
	// it would refuse the default location for everyone who has one.
	if top := checkoutRoot(); top != "" && !isHome(top) && (p == top || strings.HasPrefix(p, top+string(filepath.Separator))) {
		return "", &UnsafeError{Path: p, Reason: fmt.Sprintf("it is inside the git checkout %s (git clean would delete the record, and it must never be committed); use a path outside the checkout", top)}
	}
	return p, nil
}

func isHome(dir string) bool {
	home, err := os.UserHomeDir()
	return err == nil && home != "" && (dir == filepath.Clean(home) || dir == canonicalPrefix(home))
}

// checkoutRoot returns the git work tree containing the current directory, or "".
func checkoutRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
}

// checkPrivate requires p to be of the wanted type (directory or regular file, never a symlink),
// owned by the effective user and closed to group and others. Anything else means someone else
// can read or plant content in the record. Callers reach it only for what occ made (the marker
// is checked first), so the advice to chmod is only ever given for occ's own files.
func checkPrivate(p string, wantDir bool) error {
	if err := checkType(p, wantDir); err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	mode := "0600"
	if wantDir {
		mode = "0700"
	}
	switch {
	case !isStat || int(st.Uid) != os.Geteuid():
		// Changing its mode would not make it yours: only another state directory helps.
		return fmt.Errorf("%s must be private and owned by the current user (uid %d), but %s; choose another state directory", p, os.Geteuid(), privacyProblem(p))
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s must be private and owned by the current user (found mode %#o; want %s); fix with chmod %s %s or choose another state directory", p, fi.Mode().Perm(), mode, strings.TrimPrefix(mode, "0"), p)
	}
	return nil
}

// checkType requires p to be a directory (wantDir) or a regular file, never a symlink.
func checkType(p string, wantDir bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	kind := "regular file"
	ok := fi.Mode().IsRegular()
	if wantDir {
		kind, ok = "directory", fi.IsDir()
	}
	if !ok {
		return fmt.Errorf("%s must be a %s, but it is %s", p, kind, fsutil.Kind(fi.Mode()))
	}
	return nil
}

// privacyProblem says how p falls short of being private to the current user ("mode 0755",
// "owner uid 4242, mode 0700"), or "" when it is private.
func privacyProblem(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return err.Error()
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	owner := ""
	switch {
	case !isStat:
		owner = "owner unknown"
	case int(st.Uid) != os.Geteuid():
		owner = fmt.Sprintf("owner uid %d", st.Uid)
	}
	loose := fi.Mode().Perm()&0o077 != 0
	switch {
	case owner != "":
		return fmt.Sprintf("%s, mode %#o", owner, fi.Mode().Perm())
	case loose:
		return fmt.Sprintf("mode %#o", fi.Mode().Perm())
	}
	return ""
}
