package strictyaml

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a document: the YAML path of the offending key, the line it is
// on (for a missing key, the line of the block it is missing from; 0 when unknown), the value
// found there (empty when the key is missing), and a message that names the path, the line, the
// value and the rule.
type Problem struct {
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"`
	Value   string `json:"value"`
	Message string `json:"message"`
}

// Error returns the message, which already names the path and the value.
func (p Problem) Error() string { return p.Message }

// Problems are every problem found in a document, in the order found. A non-empty Problems is
// the error a strict decode returns.
type Problems []Problem

// Error lists every problem, one per line.
func (ps Problems) Error() string { return ps.Describe("") }

// Describe is Error with the document named in the count, for example "3 problems in the
// Installation:".
func (ps Problems) Describe(document string) string {
	switch len(ps) {
	case 0:
		return "no problems"
	case 1:
		return ps[0].Message
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems", len(ps))
	if document != "" {
		b.WriteString(" in " + document)
	}
	b.WriteString(":")
	for _, p := range ps {
		b.WriteString("\n  ")
		b.WriteString(p.Message)
	}
	return b.String()
}

// InDocumentOrder returns ps sorted by line (problems about the whole document first), keeping
// the order found among problems on one line, so decode and validation problems read top to
// bottom like the file.
func (ps Problems) InDocumentOrder() Problems {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	return out
}

// Err returns ps as an error, or nil when there are no problems.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// DocumentPath is the path of problems about the document as a whole.
const DocumentPath = "(document)"

// maxShownValue bounds how much of a value a message repeats, so a pasted certificate or a long
// line does not drown the rule.
const maxShownValue = 80

// ShownValue shortens v for display.
func ShownValue(v string) string {
	if len([]rune(v)) <= maxShownValue {
		return v
	}
	return string([]rune(v)[:maxShownValue]) + "…"
}

// NewProblem builds a Problem whose message reads `<path> (line <n>, value "<value>"): <rule>`.
func NewProblem(path string, line int, value, rule string) Problem {
	value = ShownValue(value)
	if path == DocumentPath && value == "" {
		return Problem{Path: path, Line: line, Message: path + ": " + rule}
	}
	return Problem{Path: path, Line: line, Value: value, Message: fmt.Sprintf("%s (%s%s): %s", path, lineText(line), describeValue(value), rule)}
}

// MissingProblem builds a Problem for an absent key; line is that of the block it belongs in.
func MissingProblem(path string, line int, rule string) Problem {
	where := "missing"
	if line > 0 {
		where = fmt.Sprintf("missing in the block at line %d", line)
	}
	return Problem{Path: path, Line: line, Message: fmt.Sprintf("%s (%s): %s", path, where, rule)}
}

// ObjectProblem builds a Problem about a Kubernetes object, naming it only as Kind/name so that
// none of its values (a Secret's data) reaches the message.
func ObjectProblem(path string, line int, kindName, rule string) Problem {
	return Problem{Path: path, Line: line, Value: kindName, Message: fmt.Sprintf("%s (%s%s): %s", path, lineText(line), kindName, rule)}
}

func lineText(line int) string {
	if line <= 0 {
		return ""
	}
	return "line " + strconv.Itoa(line) + ", "
}

func describeValue(v string) string {
	if v == "" {
		return `value ""`
	}
	return "value " + strconv.Quote(v)
}

// ChildPath appends a mapping key to a YAML path, bracketing keys that are not plain
// identifiers so label keys such as openshell.ai/openclaw-workspace stay readable.
func ChildPath(parent, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// IndexPath appends a list index to a YAML path.
func IndexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}
