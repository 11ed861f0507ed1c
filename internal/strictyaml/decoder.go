// Package strictyaml decodes YAML documents occ owns (the Installation, revision files) into
// typed models strictly: keys are matched exactly (no case folding), an unknown or repeated key
// is refused at every nesting level, a value of the wrong YAML type is refused, anchors and
// aliases are refused, and every problem is reported at once with its YAML path and line, never
// stopping at the first.
//
// Struct fields are matched by their yaml tag (or, lacking one, their json tag). Options add
// what a document needs beyond that: decoders for types that are not plain data, the rule
// sentence a field's problems end with, and the wording of an unknown key.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Options adapt the decoder to one kind of document.
type Options struct {
	// Document names the document in messages, for example "the Installation".
	Document string
	// EmptyRule completes "<Document> is empty; …", for example "it needs at least backend and drivers".
	EmptyRule string
	// Custom decodes values of the given types; the function must record its own problems.
	Custom map[reflect.Type]func(d *Decoder, path string, n *yaml.Node, v reflect.Value)
	// Hints add a sentence to every problem of a field, by struct type and key.
	Hints map[reflect.Type]map[string]string
	// UnknownKeyRule returns the rule for an unknown key of a struct of type t at parent, or ""
	// for the default UnknownKeyText.
	UnknownKeyRule func(parent string, t reflect.Type, key string, allowed []string) string
	// ShowValue transforms every value before a message shows it (for example to redact an
	// endpoint's credentials); nil shows values as written.
	ShowValue func(string) string
}

// Decoder holds the problems of one document while it is decoded.
type Decoder struct {
	// Problems are the problems found so far, in document order.
	Problems Problems
	// Failed holds the YAML paths whose values could not be decoded, so later validation does
	// not report a missing value on top of the decode problem that already names it.
	Failed map[string]bool
	opts   *Options
	root   *yaml.Node
}

// NewDecoder returns a decoder with the given options (nil for none).
func NewDecoder(opts *Options) *Decoder {
	if opts == nil {
		opts = &Options{}
	}
	return &Decoder{Failed: map[string]bool{}, opts: opts}
}

// Root is the document's root node once Document has parsed it.
func (d *Decoder) Root() *yaml.Node { return d.root }

// Line is the line of the value at path in the document (see LineOf).
func (d *Decoder) Line(path string) int { return LineOf(d.root, path) }

func (d *Decoder) show(v string) string {
	if d.opts.ShowValue != nil {
		return d.opts.ShowValue(v)
	}
	return v
}

// Add records a problem as it is.
func (d *Decoder) Add(p Problem) { d.Problems = append(d.Problems, p) }

// Fail records a problem for the value node n at path and marks path as undecodable.
func (d *Decoder) Fail(path string, n *yaml.Node, rule string) {
	d.Failed[path] = true
	line := d.Line(path)
	if line == 0 && n != nil {
		line = n.Line
	}
	d.Add(NewProblem(path, line, d.show(NodeValue(n)), rule))
}

var yamlErrorLine = regexp.MustCompile(`\bline (\d+)\b`)

// wholeNumber is a decimal whole number as YAML writes one.
var wholeNumber = regexp.MustCompile(`^[-+]?[0-9]+$`)

// Document parses data as exactly one YAML document and returns its root node, or nil (with a
// problem recorded) when the data is not YAML, is empty, holds more than one document, or has an
// alias that contains itself.
func (d *Decoder) Document(data []byte) *yaml.Node {
	noun := d.opts.Document
	if noun == "" {
		noun = "the document"
	}
	empty := noun + " is empty"
	if d.opts.EmptyRule != "" {
		empty += "; " + d.opts.EmptyRule
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.Add(NewProblem(DocumentPath, 0, "", empty))
		} else {
			line := 0
			if m := yamlErrorLine.FindStringSubmatch(err.Error()); m != nil {
				line, _ = strconv.Atoi(m[1])
			}
			d.Add(NewProblem(DocumentPath, line, "", noun+" is not valid YAML: "+err.Error()))
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		d.Add(NewProblem(DocumentPath, extra.Line, "", noun+" must be a single YAML document; remove the '---' separator and anything after it"))
	}
	if len(doc.Content) == 0 {
		d.Add(NewProblem(DocumentPath, 0, "", empty))
		return nil
	}
	root := doc.Content[0]
	if anchor := aliasCycle(root, map[*yaml.Node]bool{}); anchor != "" {
		d.Add(NewProblem(DocumentPath, 0, "*"+anchor, "the alias *"+anchor+" refers to a value that contains it, which has no finite form; write the value out in full"))
		return nil
	}
	d.root = root
	return root
}

// aliasCycle returns the anchor of an alias that points at one of its own ancestors, or "".
// yaml.v3 registers an anchor before parsing its children, so `&a [*a]` builds a cyclic tree
// that anything walking the document would follow forever.
func aliasCycle(n *yaml.Node, open map[*yaml.Node]bool) string {
	if n.Kind == yaml.AliasNode {
		if n.Alias != nil && open[n.Alias] {
			return n.Value
		}
		return ""
	}
	open[n] = true
	defer delete(open, n)
	for _, c := range n.Content {
		if a := aliasCycle(c, open); a != "" {
			return a
		}
	}
	return ""
}

// NodeValue is how a problem shows a YAML value: scalars as written, collections by their shape.
func NodeValue(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" && n.Value == "" {
			return "null"
		}
		return n.Value
	case yaml.MappingNode:
		return "<mapping>"
	case yaml.SequenceNode:
		return "<list>"
	case yaml.AliasNode:
		return "*" + n.Value
	}
	return ""
}

// EachKey walks a mapping in document order, refusing duplicate, non-string and anchored keys.
func (d *Decoder) EachKey(path string, n *yaml.Node, fn func(key string, keyNode, val *yaml.Node)) {
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			// The keys a merge would bring in are missing from this mapping as written; the
			// mapping is marked so validation does not also report each of them missing.
			if path != "" {
				d.Failed[path] = true
			}
			d.Add(NewProblem(ChildPath(path, k.Value), k.Line, d.show(NodeValue(v)), MsgNoMergeKeys))
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			where := path
			if where == "" {
				where = DocumentPath
			}
			d.Add(NewProblem(where, k.Line, d.show(NodeValue(k)), "keys must be plain strings; this key is "+AKind(k)))
			continue
		}
		if seen[k.Value] {
			p := ChildPath(path, k.Value)
			d.Failed[p] = true
			d.Add(NewProblem(p, k.Line, d.show(NodeValue(v)), "the key appears more than once in the same mapping; keep exactly one"))
			continue
		}
		if k.Anchor != "" {
			d.Fail(ChildPath(path, k.Value), k, MsgNoAliases)
			continue
		}
		seen[k.Value] = true
		fn(k.Value, k, v)
	}
}

// CheckKeys walks a block occ carries through without interpreting it and refuses every key
// given twice in one of its mappings, at its path and line. Anchors and aliases stay allowed
// there (an alias is not followed), and nothing else is checked.
func (d *Decoder) CheckKeys(path string, n *yaml.Node) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			d.CheckKeys(path, c)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			d.CheckKeys(IndexPath(path, i), c)
		}
	case yaml.MappingNode:
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				continue
			}
			p := ChildPath(path, k.Value)
			if seen[k.Value] {
				d.Failed[p] = true
				d.Add(NewProblem(p, k.Line, d.show(NodeValue(v)), "the key appears more than once in the same mapping; keep exactly one"))
				continue
			}
			seen[k.Value] = true
			d.CheckKeys(p, v)
		}
	}
}

// MsgNoMergeKeys refuses YAML merge keys, which copy keys from an anchor elsewhere.
const MsgNoMergeKeys = "YAML merge keys (<<) are not accepted in blocks occ owns; write the keys out in full in this mapping."

// MsgNoAliases refuses anchors and aliases, whose meaning a strict model cannot keep.
const MsgNoAliases = "YAML anchors and aliases are not accepted in blocks occ owns; write the value out in full."

// UnknownKeyText is the default rule for an unknown key.
func UnknownKeyText(parent, key string, allowed []string) string {
	where := parent
	if where == "" {
		where = "the top level"
	}
	return fmt.Sprintf("unknown key %q in %s; allowed keys are %s.", key, where, strings.Join(allowed, ", ")) + CaseHint(key, allowed) +
		" occ refuses unknown keys in every block it owns, so a misspelled key never falls back to its default."
}

// CaseHint is " Keys are case-sensitive: write <k>." when key differs from an allowed key k only
// in case, and "" otherwise.
func CaseHint(key string, allowed []string) string {
	for _, k := range allowed {
		if k != key && strings.EqualFold(k, key) {
			return " Keys are case-sensitive: write " + k + "."
		}
	}
	return ""
}

// UnknownKey reports a key the block does not define. rule, when set, replaces UnknownKeyText.
func (d *Decoder) UnknownKey(parent, key string, keyNode *yaml.Node, allowed []string, rule string) {
	if rule == "" {
		rule = UnknownKeyText(parent, key, allowed)
	}
	path := ChildPath(parent, key)
	d.Failed[path] = true
	d.Add(NewProblem(path, keyNode.Line, d.show(key), rule))
}

// AKind is DescribeKind with its article, for "it is an integer".
func AKind(n *yaml.Node) string {
	k := DescribeKind(n)
	if strings.IndexAny(k[:1], "aeiou") == 0 {
		return "an " + k
	}
	return "a " + k
}

// DescribeKind names the YAML kind of n: mapping, list, string, integer, …
func DescribeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "YAML alias"
	}
	switch n.ShortTag() {
	case "!!str":
		return "string"
	case "!!int":
		return "integer"
	case "!!float":
		return "number"
	case "!!bool":
		return "boolean"
	case "!!null":
		return "null"
	}
	return "value tagged " + n.Tag
}

// IsNull reports whether n is a YAML null.
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// MappingValue returns the value of key in mapping n (following an alias), or nil when n is
// nil, not a mapping, or lacks the key.
func MappingValue(n *yaml.Node, key string) *yaml.Node {
	v, _ := mappingEntry(n, key)
	return v
}

var nodePtrType = reflect.TypeOf((*yaml.Node)(nil))

// Value decodes n into v, the typed part of the model at path.
func (d *Decoder) Value(path string, n *yaml.Node, v reflect.Value) {
	t := v.Type()
	if t == nodePtrType {
		// Blocks occ carries through are kept exactly as written, but a key given twice is
		// refused in them too: which of the two a later reader keeps is anyone's guess.
		d.CheckKeys(path, n)
		v.Set(reflect.ValueOf(n))
		return
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.Fail(path, n, MsgNoAliases)
		return
	}
	if custom := d.opts.Custom[t]; custom != nil {
		custom(d, path, n, v)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if IsNull(n) {
			d.Fail(path, n, "the key is present but empty (null); give it a value or remove the key")
			return
		}
		p := reflect.New(t.Elem())
		before := len(d.Problems)
		d.Value(path, n, p.Elem())
		if len(d.Problems) == before || t.Elem().Kind() == reflect.Struct {
			// A scalar that failed to decode stays absent rather than becoming a zero value.
			v.Set(p)
		}
	case reflect.Struct:
		d.structValue(path, n, v)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			rule := "must be a string; it is " + AKind(n)
			if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
				rule += fmt.Sprintf(`; quote it ("%s") so YAML reads it as a string.`, d.show(n.Value))
			}
			d.Fail(path, n, rule)
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.Fail(path, n, "must be true or false (an unquoted YAML boolean); it is "+AKind(n)+".")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		var i int64
		if n.Kind == yaml.ScalarNode && wholeNumber.MatchString(n.Value) && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") && n.Style == 0 {
			// A whole number YAML could not read as an integer is out of the field's range.
			if n.Decode(&i) != nil || v.OverflowInt(i) {
				bits := uint(t.Bits())
				limit := fmt.Sprintf("too large: the largest whole number here is %d", int64(1)<<(bits-1)-1)
				if strings.HasPrefix(n.Value, "-") {
					limit = fmt.Sprintf("too small: the smallest whole number here is %d", -(int64(1) << (bits - 1)))
				}
				d.Fail(path, n, "the number is "+limit+".")
				return
			}
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
			d.Fail(path, n, "must be a whole number (an unquoted YAML integer); it is "+AKind(n)+".")
			return
		}
		v.SetInt(i)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.Fail(path, n, "must be a list; it is "+AKind(n)+".")
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.Value(IndexPath(path, i), item, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode || t.Key().Kind() != reflect.String {
			d.Fail(path, n, "must be a mapping of strings to strings; it is "+AKind(n)+".")
			return
		}
		m := reflect.MakeMapWithSize(t, len(n.Content)/2)
		d.EachKey(path, n, func(key string, _, val *yaml.Node) {
			e := reflect.New(t.Elem()).Elem()
			d.Value(ChildPath(path, key), val, e)
			m.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), e)
		})
		v.Set(m)
	default:
		panic(fmt.Sprintf("strictyaml: no decoder for %s at %s", t, path))
	}
}

// structField is one YAML key of a model struct.
type structField struct {
	key   string
	index int
}

var structFields sync.Map // reflect.Type → []structField

func fieldsOf(t reflect.Type) []structField {
	if f, ok := structFields.Load(t); ok {
		return f.([]structField)
	}
	var out []structField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("yaml")
		if !ok {
			tag = f.Tag.Get("json")
		}
		if !f.IsExported() || tag == "" || tag == "-" {
			continue
		}
		out = append(out, structField{key: strings.Split(tag, ",")[0], index: i})
	}
	structFields.Store(t, out)
	return out
}

// KeysOf returns the YAML keys of struct type t, in field order.
func KeysOf(t reflect.Type) []string {
	fields := fieldsOf(t)
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.key
	}
	return keys
}

func (d *Decoder) structValue(path string, n *yaml.Node, v reflect.Value) {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		d.Fail(path, n, "must be a mapping with the keys "+strings.Join(KeysOf(t), ", ")+"; it is "+AKind(n))
		return
	}
	fields := fieldsOf(t)
	d.EachKey(path, n, func(key string, keyNode, val *yaml.Node) {
		for _, f := range fields {
			if f.key == key {
				before := len(d.Problems)
				d.Value(ChildPath(path, key), val, v.Field(f.index))
				if hint := d.opts.Hints[t][key]; hint != "" {
					for i := before; i < len(d.Problems); i++ {
						d.Problems[i].Message += " " + hint
					}
				}
				return
			}
		}
		rule := ""
		if d.opts.UnknownKeyRule != nil {
			rule = d.opts.UnknownKeyRule(path, t, key, KeysOf(t))
		}
		d.UnknownKey(path, key, keyNode, KeysOf(t), rule)
	})
}
