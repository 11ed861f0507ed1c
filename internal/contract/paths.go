package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
	"unicode"

	"github.com/distribution/reference"
)

// IsExactSubPath reports whether s names a directory inside a volume exactly: relative, not
// empty, not the volume root ("."), no empty, "." or ".." segments (so no leading, trailing or
// doubled slash), and no backslash or NUL. The Installation's sandboxDataMount.subPath, a
// revision's mounts[].subPath and the driver's placement all use this one rule, since the data
// mount is matched to a revision mount by equal subpaths.
func IsExactSubPath(s string) bool {
	if s == "" || strings.ContainsAny(s, "\\\x00") {
		return false
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// IsExactAbsolutePath reports whether s is an absolute, clean path other than the root, without
// control characters and without whitespace at its end (a path pasted with a trailing space
// names a file nobody has): the rule for mount paths, filesystem policy paths and executable
// paths.
func IsExactAbsolutePath(s string) bool {
	return s != "/" && strings.HasPrefix(s, "/") && path.Clean(s) == s && strings.TrimRightFunc(s, unicode.IsSpace) == s &&
		strings.IndexFunc(s, unicode.IsControl) < 0
}

// PathHint is a sentence saying how the path s falls short of IsExactAbsolutePath when the
// fix is plain (surrounding whitespace, or a path that is not canonical: a trailing slash, a .
// or .. segment, a doubled slash), or "" otherwise, for the messages that refuse such a path.
func PathHint(s string) string {
	t := strings.TrimSpace(s)
	switch {
	case t != s && t != "":
		return " It has leading or trailing whitespace: write " + t + "."
	case strings.HasPrefix(s, "/") && s != "/" && path.Clean(s) != s && path.Clean(s) != "/":
		return " It is not canonical (a trailing slash, a . or .. segment, or a doubled slash): write " + path.Clean(s) + "."
	}
	return ""
}

// PathWithin reports whether p is base or lies below it.
func PathWithin(p, base string) bool {
	return p == base || strings.HasPrefix(p, strings.TrimSuffix(base, "/")+"/")
}

// PathsOverlap reports whether one of a and b is the other or lies below it: granting one
// grants (or restricts) the other.
func PathsOverlap(a, b string) bool { return PathWithin(a, b) || PathWithin(b, a) }

// RuntimeSubPathPrefix starts the per-revision PVC subpath, at the claim root, that the driver
// mounts at the runtime root /sandbox/.openclaw-runtime.
const RuntimeSubPathPrefix = "openshell-runtime-"

// MsgRuntimeSubPath is the rule every refusal of a mount on the runtime subpath quotes.
const MsgRuntimeSubPath = "OpenShell mounts /sandbox/.openclaw-runtime from an Agent revision's separate PVC subpath (" + RuntimeSubPathPrefix + "<16 hex digits> at the claim root), so no workspace or Harness mount may use that subpath or one below it."

// RuntimeSubPath is the runtime subpath of a revision: the prefix and the first 16 hex digits
// of SHA-256(revision ID), so one revision's runtime state never meets another's.
func RuntimeSubPath(revisionID string) string {
	sum := sha256.Sum256([]byte(revisionID))
	return RuntimeSubPathPrefix + hex.EncodeToString(sum[:])[:16]
}

// OnRuntimeSubPath reports whether subPath is a revision's runtime subpath or lies below one:
// its first segment starts with RuntimeSubPathPrefix.
func OnRuntimeSubPath(subPath string) bool {
	first, _, _ := strings.Cut(subPath, "/")
	return strings.HasPrefix(first, RuntimeSubPathPrefix)
}

// ImageReferenceProblem returns why image is not a container image reference a runtime can
// pull (registry/repository, lower case, with an optional :tag and an optional
// @sha256:<64 hex digits>), or "" when it is one. Surrounding whitespace is refused too: a
// runtime would never find an image by that name.
func ImageReferenceProblem(image string) string {
	switch {
	case image == "":
		return "the image reference is empty"
	case strings.TrimSpace(image) != image || strings.ContainsAny(image, " \t\r\n"):
		return "the image reference contains whitespace"
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return err.Error()
	}
	return ""
}
