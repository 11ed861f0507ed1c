package installation

import (
	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/strictyaml"
)

// Problem is one thing wrong with an Installation: the YAML path of the offending key, its line,
// the value found there (empty when the key is missing; a Kubernetes object is shown only as
// Kind/name so Secret contents never leak, and an endpoint's credentials are redacted), and a
// message that names the path, the line, the value and the rule.
type Problem = strictyaml.Problem

// Problems are every problem found in an Installation, in document order. A non-empty Problems
// is the error Decode, Validate and Load return.
type Problems []Problem

// Error lists every problem, one per line.
func (ps Problems) Error() string { return strictyaml.Problems(ps).Describe("the Installation") }

// Err returns ps as an error, or nil when there are no problems.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// documentPath is the path of problems about the document as a whole.
const documentPath = strictyaml.DocumentPath

// shownValue shortens v for display.
func shownValue(v string) string { return strictyaml.ShownValue(v) }

// newProblem builds a Problem whose message reads "<path> (line <n>, <value>): <rule>". The value
// is shown with any endpoint credentials redacted.
func newProblem(path string, line int, value, rule string) Problem {
	return strictyaml.NewProblem(path, line, contract.RedactURL(value), rule)
}

// missingProblem builds a Problem for a key that is absent from the block at line.
func missingProblem(path string, line int, rule string) Problem {
	return strictyaml.MissingProblem(path, line, rule)
}

// childPath appends a mapping key to a YAML path.
func childPath(parent, key string) string { return strictyaml.ChildPath(parent, key) }

// indexPath appends a list index to a YAML path.
func indexPath(parent string, i int) string { return strictyaml.IndexPath(parent, i) }
