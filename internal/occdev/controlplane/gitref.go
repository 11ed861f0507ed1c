package controlplane

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Head is what a checkout's HEAD resolves to.
type Head struct {
	// Commit is the object name HEAD resolves to.
	Commit string
	// Branch is the symbolic ref HEAD names, or "" when HEAD is detached.
	Branch string
	// GitDir is the repository directory HEAD was read from (a worktree's own gitdir for a
	// linked worktree).
	GitDir string
}

// maxRefDepth bounds symbolic-ref chains; git itself stops at 5 levels.
const maxRefDepth = 5

// ReadHead reads the commit of the checkout at dir straight from its git metadata, so occ needs
// no git binary: dir's own `.git`, which is either the repository directory or a file
// "gitdir: <path>" naming it (linked worktrees and submodules); then HEAD, a symbolic ref
// followed through loose refs and packed-refs, or a detached object name.
//
// Only dir's own `.git` counts, unlike `git rev-parse HEAD`, which walks up: a checkout copied
// or unpacked into a directory of another repository (a vendored copy, a fixture) is not at that
// repository's commit, and recording it there would name a commit the files never came from.
func ReadHead(dir string) (Head, error) {
	gitDir, err := findGitDir(dir)
	if err != nil {
		return Head{}, err
	}
	common := gitDir
	// A linked worktree keeps HEAD and its per-worktree refs in its own gitdir and everything
	// else in the main repository, which its `commondir` file names.
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Head{}, fmt.Errorf("read commit: %w", err)
	}
	if fi, err := os.Stat(filepath.Join(common, "reftable")); err == nil && fi.IsDir() {
		return Head{}, fmt.Errorf("read commit: %s uses git's reftable ref storage, which occ cannot read without git; convert it with `git refs migrate --ref-format=files` or use a clone with the files backend", common)
	}
	r := refReader{gitDir: gitDir, common: common}
	raw, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return Head{}, fmt.Errorf("read commit: HEAD of %s: %w", gitDir, err)
	}
	content := strings.TrimSpace(string(raw))
	head := Head{GitDir: gitDir}
	if target, ok := strings.CutPrefix(content, "ref:"); ok {
		head.Branch = strings.TrimSpace(target)
		commit, err := r.resolve(head.Branch)
		if err != nil {
			return Head{}, fmt.Errorf("read commit: HEAD of %s names %s: %w", gitDir, head.Branch, err)
		}
		head.Commit = commit
		return head, nil
	}
	if !isObjectName(content) {
		return Head{}, fmt.Errorf("read commit: HEAD of %s holds %q, neither a ref nor an object name", gitDir, truncate(content, 80))
	}
	head.Commit = content
	return head, nil
}

// findGitDir returns the repository directory of the work tree rooted at dir.
func findGitDir(dir string) (string, error) {
	dir = filepath.Clean(dir)
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotgit)
	switch {
	case err == nil && fi.IsDir():
		return dotgit, nil
	case err == nil && fi.Mode().IsRegular():
		b, err := os.ReadFile(dotgit)
		if err != nil {
			return "", fmt.Errorf("read commit: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !ok {
			return "", fmt.Errorf("read commit: %s is a file without a \"gitdir:\" line", dotgit)
		}
		target = strings.TrimSpace(target)
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("read commit: %s points to %s, which is not a directory (a moved or deleted worktree? run `git worktree repair`)", dotgit, target)
		}
		return filepath.Clean(target), nil
	case err == nil:
		return "", fmt.Errorf("read commit: %s is neither a directory nor a \"gitdir:\" file", dotgit)
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("read commit: %w", err)
	}
	return "", &NoGitError{Dir: dir, Enclosing: enclosingRepository(dir)}
}

// NoGitError is a checkout without git metadata of its own.
type NoGitError struct {
	Dir string
	// Enclosing is the nearest parent directory with a .git, "" when there is none.
	Enclosing string
}

func (e *NoGitError) Error() string {
	msg := fmt.Sprintf("read commit: %s has no .git of its own; occ records the commit the control plane runs from", e.Dir)
	if e.Enclosing != "" {
		msg += fmt.Sprintf(", and the HEAD of the repository at %s that contains it is not that commit (a copied or vendored checkout)", e.Enclosing)
	}
	return msg + "; use a git clone of OCE (a linked worktree or submodule has a .git file of its own and is read as well)"
}

// enclosingRepository is the nearest parent of dir holding a .git, for the message only.
func enclosingRepository(dir string) string {
	for cur := filepath.Dir(dir); ; cur = filepath.Dir(cur) {
		if _, err := os.Lstat(filepath.Join(cur, ".git")); err == nil {
			return cur
		}
		if cur == filepath.Dir(cur) {
			return ""
		}
	}
}

type refReader struct {
	gitDir, common string
	packed         map[string]string
}

// resolve follows name through symbolic refs to an object name. Loose refs win over packed
// ones, as in git: a ref updated after `git pack-refs` lives loose with the newer value.
func (r *refReader) resolve(name string) (string, error) {
	for range maxRefDepth {
		if !strings.HasPrefix(name, "refs/") || strings.Contains(name, "..") {
			return "", fmt.Errorf("refusing ref name %q", truncate(name, 80))
		}
		value, found, err := r.loose(name)
		if err != nil {
			return "", err
		}
		if !found {
			if err := r.loadPacked(); err != nil {
				return "", err
			}
			commit, ok := r.packed[name]
			if !ok {
				return "", fmt.Errorf("%s does not exist (a branch without commits yet?); commit something or check out a commit", name)
			}
			return commit, nil
		}
		if target, ok := strings.CutPrefix(value, "ref:"); ok {
			name = strings.TrimSpace(target)
			continue
		}
		if !isObjectName(value) {
			return "", fmt.Errorf("%s holds %q, not an object name", name, truncate(value, 80))
		}
		return value, nil
	}
	return "", fmt.Errorf("symbolic refs nest deeper than %d levels", maxRefDepth)
}

// loose reads refs/<…> from the worktree's gitdir, then from the common directory.
func (r *refReader) loose(name string) (string, bool, error) {
	dirs := []string{r.gitDir}
	if r.common != r.gitDir {
		dirs = append(dirs, r.common)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(name)))
		if err == nil {
			return strings.TrimSpace(string(b)), true, nil
		}
		// A directory where a ref was looked for (refs/heads/feature/x with "feature" asked for)
		// is simply not that ref.
		if !errors.Is(err, fs.ErrNotExist) && !isDirError(err) {
			return "", false, fmt.Errorf("read %s: %w", name, err)
		}
	}
	return "", false, nil
}

func (r *refReader) loadPacked() error {
	if r.packed != nil {
		return nil
	}
	r.packed = map[string]string{}
	b, err := os.ReadFile(filepath.Join(r.common, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read packed-refs: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		// "#" starts the header, "^" the peeled object of the annotated tag above.
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		hash, ref, ok := strings.Cut(line, " ")
		if ok && isObjectName(hash) {
			r.packed[ref] = hash
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read packed-refs: %w", err)
	}
	return nil
}

// isObjectName accepts a full SHA-1 or SHA-256 object name in git's lowercase hex.
func isObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isDirError(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if fi, statErr := os.Stat(pe.Path); statErr == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
