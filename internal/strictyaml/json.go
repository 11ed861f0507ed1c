package strictyaml

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// jsonNumber is the JSON number grammar.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// JSONValue decodes n into the values JSON holds (map[string]any, []any, string, bool, nil and
// json.Number), refusing with its path anything JSON cannot hold: non-string and repeated keys,
// infinities and NaN, anchors and aliases, other tags. Numbers keep their exact literal: a
// number written in the JSON grammar is kept as written, whatever its size (a plain 1e400,
// which YAML's float type cannot hold, is still a number, not a string), so freezing or
// printing a document never rewrites 12345678901234567890123 as 1.2345678901234568e+22.
func (d *Decoder) JSONValue(path string, n *yaml.Node) (any, bool) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.Fail(path, n, MsgNoAliases)
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		ok := true
		d.EachKey(path, n, func(key string, _, val *yaml.Node) {
			e, good := d.JSONValue(ChildPath(path, key), val)
			ok = ok && good
			m[key] = e
		})
		return m, ok && len(m) == len(n.Content)/2
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		ok := true
		for i, item := range n.Content {
			e, good := d.JSONValue(IndexPath(path, i), item)
			ok = ok && good
			s[i] = e
		}
		return s, ok
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			if n.Style == 0 && jsonNumber.MatchString(n.Value) {
				// A plain scalar in the number grammar that YAML's float cannot hold.
				return json.Number(n.Value), true
			}
			return n.Value, true
		case "!!timestamp", "!!binary":
			return n.Value, true
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if n.Decode(&b) != nil {
				d.Fail(path, n, "not a valid boolean; write true or false.")
				return nil, false
			}
			return b, true
		case "!!int", "!!float":
			if jsonNumber.MatchString(n.Value) {
				return json.Number(n.Value), true
			}
			var i int64
			if n.ShortTag() == "!!int" && n.Decode(&i) == nil {
				return json.Number(strconv.FormatInt(i, 10)), true
			}
			var f float64
			if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				d.Fail(path, n, "a number must be a finite JSON number (for example 42 or 0.5).")
				return nil, false
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), true
		}
		d.Fail(path, n, "YAML tag "+n.Tag+" is not accepted here; it holds JSON values only.")
		return nil, false
	}
	d.Fail(path, n, "not a YAML value.")
	return nil, false
}

// JSONToYAML converts a JSON document to YAML the way kubectl prints it (mapping keys sorted,
// two-space indentation, sequences not indented below their key), except that every number
// keeps its literal exactly and every string that reads like a number stays quoted, so the YAML
// reads back, through JSONValue, as the same JSON.
func JSONToYAML(js []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("convert JSON to YAML: %w", err)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(jsonNode(v)); err != nil {
		return nil, fmt.Errorf("convert JSON to YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("convert JSON to YAML: %w", err)
	}
	return buf.Bytes(), nil
}

func jsonNode(v any) *yaml.Node {
	switch t := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			n.Content = append(n.Content, jsonNode(k), jsonNode(t[k]))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range t {
			n.Content = append(n.Content, jsonNode(e))
		}
		return n
	case json.Number:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: t.String()}
	case string:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}
		if jsonNumber.MatchString(t) {
			n.Style = yaml.DoubleQuotedStyle
		}
		return n
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}
	default:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
}
