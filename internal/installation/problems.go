package installation

import (
	"fmt"
	"strconv"
	"strings"
)

// Problem is one thing wrong with an Installation: the YAML path of the offending key, the value
// found there (empty when the key is missing; a Kubernetes object is shown only as Kind/name so
// Secret contents never leak), and a message that names the path, the value and the rule.
type Problem struct {
	Path    string `json:"path"`
	Value   string `json:"value"`
	Message string `json:"message"`
}

// Error returns the message, which already names the path and the value.
func (p Problem) Error() string { return p.Message }

// Problems are every problem found in an Installation, in document order. A non-empty Problems
// is the error Decode, Validate and Load return.
type Problems []Problem

// Error lists every problem, one per line.
func (ps Problems) Error() string {
	switch len(ps) {
	case 0:
		return "no problems"
	case 1:
		return ps[0].Message
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems in the Installation:", len(ps))
	for _, p := range ps {
		b.WriteString("\n  ")
		b.WriteString(p.Message)
	}
	return b.String()
}

// Err returns ps as an error, or nil when there are no problems.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// documentPath is the path of problems about the document as a whole.
const documentPath = "(document)"

// maxShownValue bounds how much of a value a message repeats, so a pasted certificate or a long
// line does not drown the rule.
const maxShownValue = 80

// shownValue shortens v for display.
func shownValue(v string) string {
	if len([]rune(v)) <= maxShownValue {
		return v
	}
	return string([]rune(v)[:maxShownValue]) + "…"
}

// newProblem builds a Problem whose message reads "<path> (<value>): <rule>".
func newProblem(path, value, rule string) Problem {
	value = shownValue(value)
	if path == documentPath && value == "" {
		return Problem{Path: path, Message: path + ": " + rule}
	}
	return Problem{Path: path, Value: value, Message: fmt.Sprintf("%s (%s): %s", path, describeValue(value), rule)}
}

// missingProblem builds a Problem for a key that is absent.
func missingProblem(path, rule string) Problem {
	return Problem{Path: path, Message: fmt.Sprintf("%s (missing): %s", path, rule)}
}

// objectProblem builds a Problem about a Kubernetes object, naming it only as Kind/name.
func objectProblem(path, kindName, rule string) Problem {
	return Problem{Path: path, Value: kindName, Message: fmt.Sprintf("%s (%s): %s", path, kindName, rule)}
}

func describeValue(v string) string {
	if v == "" {
		return `value ""`
	}
	return "value " + strconv.Quote(v)
}

// childPath appends a mapping key to a YAML path, bracketing keys that are not plain
// identifiers so label keys such as openshell.ai/openclaw-workspace stay readable.
func childPath(parent, key string) string {
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

// indexPath appends a list index to a YAML path.
func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}
