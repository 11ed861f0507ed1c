package contract

import (
	"path"
	"strings"
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
// NUL: the rule for mount paths, filesystem policy paths and executable paths.
func IsExactAbsolutePath(s string) bool {
	return s != "/" && strings.HasPrefix(s, "/") && path.Clean(s) == s && !strings.ContainsRune(s, 0)
}

// PathWithin reports whether p is base or lies below it.
func PathWithin(p, base string) bool {
	return p == base || strings.HasPrefix(p, strings.TrimSuffix(base, "/")+"/")
}

// PathsOverlap reports whether one of a and b is the other or lies below it: granting one
// grants (or restricts) the other.
func PathsOverlap(a, b string) bool { return PathWithin(a, b) || PathWithin(b, a) }
