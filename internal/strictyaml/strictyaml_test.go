package strictyaml

import (
	"reflect"
	"strings"
	"testing"
)

const doc = `top:
  list:
    - name: a
    - name: b
      labels:
        openshell.ai/x: "y"
  other: 1
`

// A problem's line is found from its path alone: mapping keys, list indexes and bracketed keys;
// a missing key gets the line of the block it belongs in.
func TestLineOf(t *testing.T) {
	d := NewDecoder(nil)
	root := d.Document([]byte(doc))
	if root == nil {
		t.Fatal(d.Problems)
	}
	for path, want := range map[string]int{
		"top": 1, "top.list": 2, "top.list[0]": 3, "top.list[1].name": 4,
		`top.list[1].labels["openshell.ai/x"]`: 6, "top.other": 7,
		"top.list[1].missing": 4, "top.list[9]": 2, "top.nope.deeper": 1, "absent": 0, DocumentPath: 0,
	} {
		if got := LineOf(root, path); got != want {
			t.Errorf("LineOf(%s) = %d, want %d", path, got, want)
		}
	}
	if _, found := Locate(root, "top.list[1].missing"); found {
		t.Error("Locate found a missing key")
	}
}

type sample struct {
	ReadOnly *bool   `yaml:"readOnly"`
	Name     string  `json:"name"`
	Ports    []int   `json:"ports,omitempty"`
	Nested   *nested `json:"nested,omitempty"`
}

type nested struct {
	Key string `json:"key"`
}

// Keys are matched exactly, every problem is reported with its path and line, and a key that
// differs from an allowed one only in case says so.
func TestDecodeIsCaseExactAndReportsAll(t *testing.T) {
	d := NewDecoder(&Options{Document: "the sample"})
	root := d.Document([]byte("readonly: true\nname: 3\nports: [1, x]\nnested: {key: k, Key: K}\nname: again\n"))
	var s sample
	d.Value("", root, reflect.ValueOf(&s).Elem())
	var got []string
	for _, p := range d.Problems {
		got = append(got, p.Path)
		if p.Line == 0 || !strings.HasPrefix(p.Message, p.Path+" (line ") {
			t.Errorf("problem without path and line: %+v", p)
		}
	}
	if want := []string{"readonly", "name", "ports[1]", "nested.Key", "name"}; !reflect.DeepEqual(got, want) {
		t.Errorf("problem paths = %v, want %v\n%s", got, want, d.Problems)
	}
	if !strings.Contains(d.Problems[0].Message, "Keys are case-sensitive: write readOnly.") {
		t.Errorf("no case hint: %s", d.Problems[0].Message)
	}
	if s.ReadOnly != nil || s.Nested == nil || s.Nested.Key != "k" {
		t.Errorf("decoded %+v", s)
	}
}

// Document-level problems: not YAML (with the parser's line), empty, several documents.
func TestDocumentProblems(t *testing.T) {
	for data, want := range map[string]string{
		"a: [\n":       "the sample is not valid YAML",
		"":             "the sample is empty; it needs a",
		"a: 1\n---\n":  "must be a single YAML document",
		"a: &x [*x]\n": "refers to a value that contains it",
	} {
		d := NewDecoder(&Options{Document: "the sample", EmptyRule: "it needs a"})
		d.Document([]byte(data))
		if len(d.Problems) != 1 || !strings.Contains(d.Problems[0].Message, want) {
			t.Errorf("%q: problems %v, want one containing %q", data, d.Problems, want)
		}
	}
}
