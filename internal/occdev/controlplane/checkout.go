package controlplane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// EnvRepository selects the OCE checkout when --repository is not given.
const EnvRepository = "OCC_DEVELOPMENT_REPOSITORY"

// FlagRepository is the flag that selects the OCE checkout.
const FlagRepository = "--repository"

// CheckoutFiles are the files that make a directory an OCE checkout: the two Compose files the
// Compose profile renders and the production chart the Kubernetes-only profile installs. A
// directory holding all three is the checkout both profiles run from.
var CheckoutFiles = []string{
	"compose.yaml",
	"compose.kubernetes.yaml",
	filepath.Join("deploy", "helm", "openclaw-enterprise", "Chart.yaml"),
}

// ErrNoCheckout is wrapped by FindCheckout when neither a flag, nor the environment, nor the
// working directory names a checkout. `up` treats it as "no layer 3": it stops after the
// sandbox platform and prints how to add the control plane.
var ErrNoCheckout = errors.New("no OpenClaw Enterprise checkout")

// Checkout is an OCE source checkout occ runs the control plane from.
type Checkout struct {
	// Root is the canonical absolute path of the checkout (symlinks resolved).
	Root string
	// Commit is the commit HEAD points to (40 or 64 lowercase hex digits).
	Commit string
	// Branch is the ref HEAD names ("refs/heads/main"), or "" when HEAD is detached.
	Branch string
	// Source says how the checkout was selected: FlagRepository, EnvRepository or
	// "working directory".
	Source string
}

// FindCheckoutOptions select the checkout. The first non-empty of Flag and Env wins; with both
// empty the search walks up from WorkingDir.
type FindCheckoutOptions struct {
	// Flag is the value of --repository.
	Flag string
	// Env is the value of OCC_DEVELOPMENT_REPOSITORY.
	Env string
	// WorkingDir is where the search starts and what relative paths are relative to; empty means
	// the process's working directory.
	WorkingDir string
}

// NoCheckoutError reports a search that found no checkout. It wraps ErrNoCheckout.
type NoCheckoutError struct {
	// Start is the directory the search started in; every parent up to / was tried as well.
	Start string
}

func (e *NoCheckoutError) Error() string {
	return fmt.Sprintf("%s found: looked for %s in %s and every parent directory up to /; run occ dev from inside an OCE checkout, or pass %s <checkout> (or set %s)",
		ErrNoCheckout, describeFiles(), e.Start, FlagRepository, EnvRepository)
}

func (e *NoCheckoutError) Unwrap() error { return ErrNoCheckout }

// NotCheckoutError reports an explicitly selected directory that is not an OCE checkout.
type NotCheckoutError struct {
	// Option is FlagRepository or EnvRepository; Value what it was set to.
	Option, Value string
	// Missing are the CheckoutFiles the directory lacks ("" when the directory itself is absent).
	Missing []string
	// Cause is set when the directory could not be examined at all.
	Cause error
}

func (e *NotCheckoutError) Error() string {
	return fmt.Sprintf("%s %q is not an OpenClaw Enterprise checkout: %s; pass the root of an OCE clone", e.Option, e.Value, e.Reason())
}

// Reason says why the directory is not a checkout, without naming the setting.
func (e *NotCheckoutError) Reason() string {
	switch {
	case errors.Is(e.Cause, fs.ErrNotExist):
		return "it does not exist"
	case e.Cause != nil:
		return e.Cause.Error()
	}
	return fmt.Sprintf("it lacks %s (an OCE checkout holds %s)", strings.Join(e.Missing, ", "), describeFiles())
}

// FindCheckout locates the OCE checkout and reads its commit. An explicitly selected directory
// must be a checkout itself (a typo must not silently select a parent); the search from the
// working directory accepts the nearest directory, at or above it, that holds every
// CheckoutFiles entry.
func FindCheckout(opts FindCheckoutOptions) (Checkout, error) {
	wd := opts.WorkingDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return Checkout{}, fmt.Errorf("find OCE checkout: working directory: %w", err)
		}
	}
	if !filepath.IsAbs(wd) {
		abs, err := filepath.Abs(wd)
		if err != nil {
			return Checkout{}, fmt.Errorf("find OCE checkout: working directory %s: %w", wd, err)
		}
		wd = abs
	}
	for _, explicit := range []struct{ option, value string }{{FlagRepository, opts.Flag}, {EnvRepository, opts.Env}} {
		if explicit.value == "" {
			continue
		}
		p := explicit.value
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		root, err := filepath.EvalSymlinks(p)
		if err != nil {
			return Checkout{}, &NotCheckoutError{Option: explicit.option, Value: explicit.value, Cause: err}
		}
		if missing, err := missingFiles(root); err != nil {
			return Checkout{}, &NotCheckoutError{Option: explicit.option, Value: explicit.value, Cause: err}
		} else if len(missing) > 0 {
			return Checkout{}, &NotCheckoutError{Option: explicit.option, Value: explicit.value, Missing: missing}
		}
		return openCheckout(root, explicit.option)
	}

	start := wd
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		start = r
	}
	for dir := start; ; dir = filepath.Dir(dir) {
		missing, err := missingFiles(dir)
		if err != nil {
			return Checkout{}, fmt.Errorf("find OCE checkout: examine %s: %w", dir, err)
		}
		if len(missing) == 0 {
			return openCheckout(dir, "working directory")
		}
		if dir == filepath.Dir(dir) {
			return Checkout{}, &NoCheckoutError{Start: start}
		}
	}
}

func openCheckout(root, source string) (Checkout, error) {
	head, err := ReadHead(root)
	if err != nil {
		return Checkout{}, fmt.Errorf("OCE checkout %s: %w", root, err)
	}
	return Checkout{Root: root, Commit: head.Commit, Branch: head.Branch, Source: source}, nil
}

// missingFiles lists the CheckoutFiles that dir lacks as regular files. A file that exists but
// cannot be examined (permissions) is an error rather than "missing", so the user is told why.
func missingFiles(dir string) ([]string, error) {
	var missing []string
	for _, name := range CheckoutFiles {
		fi, err := os.Stat(filepath.Join(dir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			missing = append(missing, name)
		case err != nil:
			return nil, err
		case !fi.Mode().IsRegular():
			missing = append(missing, name+" (not a regular file)")
		}
	}
	return missing, nil
}

func describeFiles() string {
	return strings.Join(CheckoutFiles[:len(CheckoutFiles)-1], ", ") + " and " + CheckoutFiles[len(CheckoutFiles)-1]
}
