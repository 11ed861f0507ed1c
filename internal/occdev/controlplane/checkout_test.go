package controlplane

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	commitA = "1111111111111111111111111111111111111111"
	commitB = "2222222222222222222222222222222222222222"
)

// makeCheckout creates the three files that make a directory an OCE checkout.
func makeCheckout(t *testing.T, dir string) string {
	t.Helper()
	for _, f := range CheckoutFiles {
		write(t, filepath.Join(dir, f), "# fixture\n")
	}
	return dir
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func canonical(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// An engineer runs occ dev up from deep inside the OCE checkout: the checkout is the nearest
// directory above holding the compose files and the chart, and its commit is recorded.
func TestFindCheckoutWalksUp(t *testing.T) {
	root := makeCheckout(t, canonical(t, t.TempDir()))
	write(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(root, ".git", "refs", "heads", "main"), commitA+"\n")
	deep := filepath.Join(root, "apps", "controller", "src")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := FindCheckout(FindCheckoutOptions{WorkingDir: deep})
	if err != nil {
		t.Fatal(err)
	}
	if c.Root != root || c.Commit != commitA || c.Branch != "refs/heads/main" || c.Source != "working directory" {
		t.Fatalf("found %+v", c)
	}
}

// Outside any checkout, the search fails with ErrNoCheckout and says what it looked for,
// where, and how to select one.
func TestFindCheckoutNone(t *testing.T) {
	dir := canonical(t, t.TempDir())
	write(t, filepath.Join(dir, "compose.yaml"), "services: {}\n") // one file is not a checkout
	_, err := FindCheckout(FindCheckoutOptions{WorkingDir: dir})
	if !errors.Is(err, ErrNoCheckout) {
		t.Fatalf("got %v, want ErrNoCheckout", err)
	}
	for _, want := range []string{"compose.yaml, compose.kubernetes.yaml and deploy/helm/openclaw-enterprise/Chart.yaml", "in " + dir + " and every parent directory up to /", "--repository", EnvRepository} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// --repository wins over OCC_DEVELOPMENT_REPOSITORY, a relative value is relative to the working
// directory, and a directory that is not a checkout is refused by name (not silently replaced by
// a parent), listing what it lacks.
func TestFindCheckoutExplicit(t *testing.T) {
	base := canonical(t, t.TempDir())
	flag := makeCheckout(t, filepath.Join(base, "flag"))
	env := makeCheckout(t, filepath.Join(base, "env"))
	for _, d := range []string{flag, env} {
		write(t, filepath.Join(d, ".git", "HEAD"), commitB+"\n")
	}
	c, err := FindCheckout(FindCheckoutOptions{Flag: "flag", Env: env, WorkingDir: base})
	if err != nil {
		t.Fatal(err)
	}
	if c.Root != flag || c.Source != FlagRepository || c.Commit != commitB || c.Branch != "" {
		t.Fatalf("found %+v", c)
	}
	if c, err = FindCheckout(FindCheckoutOptions{Env: env, WorkingDir: base}); err != nil || c.Root != env || c.Source != EnvRepository {
		t.Fatalf("env: %+v %v", c, err)
	}
	partial := filepath.Join(base, "partial")
	write(t, filepath.Join(partial, "compose.yaml"), "services: {}\n")
	_, err = FindCheckout(FindCheckoutOptions{Env: partial, WorkingDir: base})
	var nc *NotCheckoutError
	if !errors.As(err, &nc) || nc.Option != EnvRepository || !strings.Contains(err.Error(), "it lacks compose.kubernetes.yaml, deploy/helm/openclaw-enterprise/Chart.yaml") {
		t.Fatalf("partial checkout: %v", err)
	}
	if _, err := FindCheckout(FindCheckoutOptions{Flag: filepath.Join(base, "missing")}); !errors.As(err, &nc) || nc.Option != FlagRepository {
		t.Fatalf("missing directory: %v", err)
	}
}

// HEAD in each of git's layouts is read without a git binary: a loose branch, a branch only in
// packed-refs (after `git gc`), a symbolic ref chain, a detached HEAD, a linked worktree whose
// .git is a file, and an unborn branch (refused).
func TestReadHeadLayouts(t *testing.T) {
	t.Run("packed", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/release/1.0\n")
		write(t, filepath.Join(dir, ".git", "packed-refs"), "# pack-refs with: peeled fully-peeled sorted\n"+commitB+" refs/heads/release/1.0\n"+commitA+" refs/tags/v1\n^"+commitB+"\n")
		// refs/heads/release exists as a directory of other refs; that is not this ref.
		write(t, filepath.Join(dir, ".git", "refs", "heads", "release", "0.9"), commitA+"\n")
		h, err := ReadHead(dir)
		if err != nil || h.Commit != commitB || h.Branch != "refs/heads/release/1.0" {
			t.Fatalf("%+v %v", h, err)
		}
	})
	t.Run("loose wins over packed", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(dir, ".git", "packed-refs"), commitA+" refs/heads/main\n")
		write(t, filepath.Join(dir, ".git", "refs", "heads", "main"), commitB+"\n")
		if h, err := ReadHead(dir); err != nil || h.Commit != commitB {
			t.Fatalf("%+v %v", h, err)
		}
	})
	t.Run("symbolic chain", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/alias\n")
		write(t, filepath.Join(dir, ".git", "refs", "heads", "alias"), "ref: refs/heads/main\n")
		write(t, filepath.Join(dir, ".git", "refs", "heads", "main"), commitA+"\n")
		if h, err := ReadHead(dir); err != nil || h.Commit != commitA {
			t.Fatalf("%+v %v", h, err)
		}
	})
	t.Run("detached", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, ".git", "HEAD"), commitA+"\n")
		if h, err := ReadHead(dir); err != nil || h.Commit != commitA || h.Branch != "" {
			t.Fatalf("%+v %v", h, err)
		}
	})
	t.Run("worktree .git file", func(t *testing.T) {
		main := t.TempDir()
		write(t, filepath.Join(main, ".git", "packed-refs"), commitB+" refs/heads/feature\n")
		gitdir := filepath.Join(main, ".git", "worktrees", "wt")
		write(t, filepath.Join(gitdir, "HEAD"), "ref: refs/heads/feature\n")
		write(t, filepath.Join(gitdir, "commondir"), "../..\n")
		wt := t.TempDir()
		rel, err := filepath.Rel(wt, gitdir)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wt, ".git"), "gitdir: "+rel+"\n")
		h, err := ReadHead(filepath.Join(wt))
		if err != nil || h.Commit != commitB || h.GitDir != gitdir {
			t.Fatalf("%+v %v", h, err)
		}
	})
	t.Run("unborn branch", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
		if _, err := ReadHead(dir); err == nil || !strings.Contains(err.Error(), "refs/heads/main does not exist") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("no git at all", func(t *testing.T) {
		if _, err := ReadHead(t.TempDir()); err == nil || !strings.Contains(err.Error(), "has no .git of its own") {
			t.Fatalf("got %v", err)
		}
	})
}

// On a repository made by the real git (commit, gc, worktree add), ReadHead agrees with
// `git rev-parse HEAD` in the main tree and in a linked worktree.
func TestReadHeadAgreesWithGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("skipped: no git binary on this machine to compare with (ReadHead itself needs none)")
	}
	repo := t.TempDir()
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(repo, "init", "-q", "-b", "main")
	write(t, filepath.Join(repo, "f"), "1\n")
	run(repo, "add", "f")
	run(repo, "commit", "-qm", "one")
	run(repo, "gc", "-q") // moves refs/heads/main into packed-refs
	write(t, filepath.Join(repo, "f"), "2\n")
	run(repo, "commit", "-qam", "two")
	wt := filepath.Join(t.TempDir(), "wt")
	run(repo, "worktree", "add", "-q", "-b", "side", wt, "HEAD~1")
	for _, dir := range []string{repo, wt} {
		h, err := ReadHead(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := run(dir, "rev-parse", "HEAD"); h.Commit != want {
			t.Errorf("%s: ReadHead %s, git %s", dir, h.Commit, want)
		}
	}
}

// An OCE checkout copied into a directory of another repository (a vendored copy, or the
// repository's own fixture testdata/oce-checkout inside occ) has no .git of its own: it is
// refused, naming the enclosing repository, and never recorded at that repository's HEAD.
func TestCheckoutInsideAnotherRepositoryIsNotRecordedAtItsHead(t *testing.T) {
	outer := canonical(t, t.TempDir())
	write(t, filepath.Join(outer, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(outer, ".git", "refs", "heads", "main"), commitA+"\n")
	inner := makeCheckout(t, filepath.Join(outer, "vendor", "oce"))
	for name, opts := range map[string]FindCheckoutOptions{
		"from inside it":  {WorkingDir: filepath.Join(inner, "apps")},
		"by --repository": {Flag: inner, WorkingDir: outer},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.MkdirAll(filepath.Join(inner, "apps"), 0o755); err != nil {
				t.Fatal(err)
			}
			c, err := FindCheckout(opts)
			var ng *NoGitError
			if !errors.As(err, &ng) {
				t.Fatalf("found %+v (%v); want a NoGitError, not the enclosing repository's commit", c, err)
			}
			if ng.Dir != inner || ng.Enclosing != outer || strings.Contains(err.Error(), commitA) ||
				!strings.Contains(err.Error(), "has no .git of its own") || !strings.Contains(err.Error(), "the repository at "+outer) {
				t.Errorf("error: %v", err)
			}
		})
	}
	// Given a .git of its own (a clone, here a detached HEAD), the same directory is read as
	// itself.
	write(t, filepath.Join(inner, ".git", "HEAD"), commitB+"\n")
	c, err := FindCheckout(FindCheckoutOptions{WorkingDir: inner})
	if err != nil || c.Commit != commitB {
		t.Fatalf("found %+v (%v), want commit %s", c, err, commitB)
	}
}

// The repository's own fixture checkout (testdata/oce-checkout) has no git metadata of its own:
// it sits inside occ's work tree, whose HEAD is not a commit of OCE, so it is refused rather
// than recorded at occ's commit. Tests run it through ocebed.Checkout, which gives a copy a .git.
func TestRepositoryFixtureIsNotRecordedAtOccsCommit(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	fixture := canonical(t, filepath.Join(wd, "..", "..", "..", "testdata", "oce-checkout"))
	if _, err := os.Lstat(filepath.Join(fixture, ".git")); err == nil {
		t.Fatalf("%s has a .git of its own; the fixture must not", fixture)
	}
	_, err = FindCheckout(FindCheckoutOptions{WorkingDir: filepath.Join(fixture, "apps", "controller", "src")})
	var ng *NoGitError
	if !errors.As(err, &ng) || ng.Dir != fixture {
		t.Fatalf("got %v, want a NoGitError for %s", err, fixture)
	}
}
