package installation

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/fsutil"
	corev1 "k8s.io/api/core/v1"

	"go.yaml.in/yaml/v3"
)

// Marshal writes the Installation as YAML. Typed blocks are written from the model; blocks occ
// does not own are re-emitted exactly as they were decoded, comments included. Keys keep the
// order they were decoded in, so anchors in carried blocks still precede their aliases.
func (in *Installation) Marshal() ([]byte, error) {
	root, err := in.node()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encode Installation: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode Installation: %w", err)
	}
	return buf.Bytes(), nil
}

func (in *Installation) node() (*yaml.Node, error) {
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	emitted := map[string]bool{}
	for _, key := range withDefaults(in.keyOrder, topLevelKeys) {
		if emitted[key] {
			continue
		}
		emitted[key] = true
		var val *yaml.Node
		switch key {
		case "occ":
			val = in.OCC
		case "presets":
			val = in.Presets
		case "backend":
			seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for i, b := range in.Backend {
				switch {
				case b.OpenShell != nil:
					n, err := encodeNode(b.OpenShell)
					if err != nil {
						return nil, fmt.Errorf("backend[%d]: %w", i, err)
					}
					seq.Content = append(seq.Content, n)
				case b.Raw != nil:
					seq.Content = append(seq.Content, b.Raw)
				}
			}
			if len(seq.Content) == 0 {
				seq.Style = yaml.FlowStyle
			}
			val = seq
		case "drivers":
			n, err := in.Drivers.node()
			if err != nil {
				return nil, err
			}
			val = n
		}
		if val != nil {
			root.Content = append(root.Content, stringNode(key), val)
		}
	}
	return root, nil
}

func (ds *Drivers) node() (*yaml.Node, error) {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	owned := map[string]any{}
	if ds.Compute != nil {
		owned["compute"] = ds.Compute
	}
	if ds.Sandbox != nil {
		owned["sandbox"] = ds.Sandbox
	}
	if ds.CredentialGateway != nil {
		owned["credential_gateway"] = ds.CredentialGateway
	}
	order := append([]string(nil), ds.keyOrder...)
	for _, o := range ds.Other {
		order = append(order, o.Name)
	}
	order = append(order, "compute", "sandbox", "credential_gateway")
	emitted := map[string]bool{}
	for _, key := range order {
		if emitted[key] {
			continue
		}
		if v, ok := owned[key]; ok {
			n, err := encodeNode(v)
			if err != nil {
				return nil, fmt.Errorf("drivers.%s: %w", key, err)
			}
			m.Content = append(m.Content, stringNode(key), n)
			emitted[key] = true
			continue
		}
		for _, o := range ds.Other {
			if o.Name == key && o.Node != nil {
				m.Content = append(m.Content, stringNode(key), o.Node)
				emitted[key] = true
				break
			}
		}
	}
	return m, nil
}

// withDefaults returns order followed by any default key it lacks.
func withDefaults(order, defaults []string) []string {
	out := append([]string(nil), order...)
	return append(out, defaults...)
}

func stringNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func encodeNode(v any) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return &n, nil
}

// MarshalYAML writes each object as a mapping with sorted keys. Numbers keep their kind: a
// float that happens to be whole is written as 1.0, so it reads back as a float, not an int.
func (rs Resources) MarshalYAML() (any, error) {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for i := range rs {
		n, err := objectNode(rs[i].Object)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", rs[i].GetKind(), rs[i].GetName(), err)
		}
		seq.Content = append(seq.Content, n)
	}
	return seq, nil
}

// objectNode writes a JSON-compatible value, as held by unstructured objects, as a YAML node.
func objectNode(v any) (*yaml.Node, error) {
	switch x := v.(type) {
	case map[string]any:
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			val, err := objectNode(x[k])
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, stringNode(k), val)
		}
		return m, nil
	case []any:
		s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, item := range x {
			val, err := objectNode(item)
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, val)
		}
		return s, nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("number %v has no YAML form a Kubernetes object accepts", x)
		}
		text := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(text, ".eE") {
			text += ".0"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: text}, nil
	case string:
		// Encoding through yaml.v3 quotes strings that would otherwise read back as numbers,
		// booleans, nulls or timestamps.
		return encodeNode(x)
	default:
		return encodeNode(x)
	}
}

// MarshalYAML writes each quantity in its canonical string form, always as a YAML string.
func (r AgentResources) MarshalYAML() (any, error) {
	type lists struct {
		Requests *yaml.Node `yaml:"requests,omitempty"`
		Limits   *yaml.Node `yaml:"limits,omitempty"`
	}
	return lists{Requests: quantityNode(r.Requests), Limits: quantityNode(r.Limits)}, nil
}

func quantityNode(l corev1.ResourceList) *yaml.Node {
	if len(l) == 0 {
		return nil
	}
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, string(name))
	}
	sort.Strings(names)
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, name := range names {
		q := l[corev1.ResourceName(name)]
		m.Content = append(m.Content, stringNode(name), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: q.String(), Style: yaml.DoubleQuotedStyle})
	}
	return m
}

// EncodeNode turns a Go value into a YAML node, for callers that build an Installation in code
// and need to fill a carried block such as drivers.compute.configuration.
func EncodeNode(v any) (*yaml.Node, error) {
	n, err := encodeNode(v)
	if err != nil {
		return nil, fmt.Errorf("encode YAML node: %w", err)
	}
	return n, nil
}

// WriteFile validates the Installation and writes it to path with mode 0600, replacing any
// existing file atomically. An invalid Installation is never written, so a reader never finds
// a file that startup would refuse.
func (in *Installation) WriteFile(path string) error {
	if problems := in.Validate(); len(problems) > 0 {
		return fmt.Errorf("write Installation %s: %w", path, problems)
	}
	data, err := in.Marshal()
	if err != nil {
		return fmt.Errorf("write Installation %s: %w", path, err)
	}
	if err := fsutil.WriteFileAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("write Installation: %w", err)
	}
	return nil
}
