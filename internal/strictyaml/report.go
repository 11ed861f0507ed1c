package strictyaml

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Report collects the validation problems of a decoded document: each gets the line of its path,
// a value decoding already refused is not reported again, and values pass through the decoder's
// ShowValue. A document built in code (no source) gets problems without lines.
type Report struct {
	// Problems are the problems found, in the order found.
	Problems Problems
	root     *yaml.Node
	failed   map[string]bool
	show     func(string) string
}

// NewReport starts a report on the document rooted at root (nil when built in code), skipping
// the paths in failed (a Decoder's Failed), showing values through show (nil: as written).
func NewReport(root *yaml.Node, failed map[string]bool, show func(string) string) *Report {
	return &Report{root: root, failed: failed, show: show}
}

// Report starts a report on the document d decoded.
func (d *Decoder) Report() *Report { return NewReport(d.root, d.Failed, d.opts.ShowValue) }

// Add records p unless decoding already refused the value at its path (or a parent of it): a
// value that could not be decoded is left zero in the model and must not be reported twice.
func (r *Report) Add(p Problem) {
	if p.Path != "" && r.DecodeFailed(p.Path) {
		return
	}
	r.Problems = append(r.Problems, p)
}

// DecodeFailed reports whether decoding refused the value at p or at one of its parents.
func (r *Report) DecodeFailed(p string) bool {
	for f := range r.failed {
		if p == f || strings.HasPrefix(p, f) && (p[len(f)] == '.' || p[len(f)] == '[') {
			return true
		}
	}
	return false
}

// Line is the line of path in the document (see LineOf).
func (r *Report) Line(path string) int { return LineOf(r.root, path) }

// Present reports whether the document has a value at path. Without a source document it
// cannot know and reports true, so a problem built in code names the value it found.
func (r *Report) Present(path string) bool {
	if r.root == nil {
		return true
	}
	_, found := Locate(r.root, path)
	return found
}

// Bad records a problem with the value found at path. When the document holds a scalar there,
// the problem shows it as written (a quantity the user wrote "2000" is never shown as the
// model's canonical "2k"); value is shown otherwise.
func (r *Report) Bad(path, value, rule string) {
	value = r.Written(path, value)
	if r.show != nil {
		value = r.show(value)
	}
	r.Add(NewProblem(path, r.Line(path), value, rule))
}

// Written is the scalar at path as the document writes it, or fallback when the document has
// no scalar there (a value built in code, a list shown as "[]").
func (r *Report) Written(path, fallback string) string {
	if n := NodeAt(r.root, path); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return fallback
}

// Missing records a problem for a key absent from its block.
func (r *Report) Missing(path, rule string) { r.Add(MissingProblem(path, r.Line(path), rule)) }

// Required records the problem of a required value: Missing when the key is absent, Bad (with
// the empty or blank value) when it is present.
func (r *Report) Required(path, value, rule string) {
	if value == "" && !r.Present(path) {
		r.Missing(path, rule)
		return
	}
	r.Bad(path, value, rule)
}

// Object records a problem about a Kubernetes object, naming it only as Kind/name.
func (r *Report) Object(path, kindName, rule string) {
	r.Add(ObjectProblem(path, r.Line(path), kindName, rule))
}
