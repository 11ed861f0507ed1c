// Package repocheck holds checks over the repository's own files that no compiler or vet pass
// makes: its tests walk the source tree and fail on what must not come back.
package repocheck
