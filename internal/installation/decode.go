package installation

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"go.yaml.in/yaml/v3"
)

// Decode parses an Installation strictly. An unknown key in any block occ owns is refused at
// every nesting level, a value of the wrong YAML type is refused, and every such problem is
// reported with its YAML path. Decode does not apply the validation rules; Load and Validate do.
//
// When the document has problems, Decode returns them as Problems together with the part of the
// model it could decode (nil only when the document is not a YAML mapping at all), so a caller
// can still run Validate and report everything at once.
func Decode(data []byte) (*Installation, error) {
	d := &decoder{failed: map[string]bool{}}
	in := d.decodeDocument(data)
	if in != nil {
		in.failed = d.failed
	}
	return in, d.problems.Err()
}

type decoder struct {
	problems Problems
	failed   map[string]bool
}

// fail records a problem for the value node n at path and marks path as undecodable.
func (d *decoder) fail(path string, n *yaml.Node, rule string) {
	d.failed[path] = true
	d.problems = append(d.problems, newProblem(path, nodeValue(n), rule))
}

// nodeValue is how a problem shows a YAML value: scalars as written, collections by their shape.
func nodeValue(n *yaml.Node) string {
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

// seedClosedBlocks are the blocks seed 001 names in its sentence on unknown keys.
var seedClosedBlocks = map[string]bool{
	pathK8s: true, pathK8s + ".serviceAccount": true, pathK8s + ".sandboxDataMount": true,
	pathK8s + ".agentResources": true, pathPolicy: true, pathPolicy + ".process": true,
	pathGateway + ".readiness": true,
}

var topLevelKeys = []string{"occ", "backend", "drivers", "presets"}

func (d *decoder) decodeDocument(data []byte) *Installation {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.problems = append(d.problems, newProblem(documentPath, "", "the Installation is empty; it needs at least backend and drivers"))
		} else {
			d.problems = append(d.problems, newProblem(documentPath, "", "the Installation is not valid YAML: "+err.Error()))
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		d.problems = append(d.problems, newProblem(documentPath, "", "the Installation must be a single YAML document; remove the '---' separator and anything after it"))
	}
	if len(doc.Content) == 0 {
		d.problems = append(d.problems, newProblem(documentPath, "", "the Installation is empty; it needs at least backend and drivers"))
		return nil
	}
	root := doc.Content[0]
	if anchor := aliasCycle(root, map[*yaml.Node]bool{}); anchor != "" {
		d.problems = append(d.problems, newProblem(documentPath, "*"+anchor, "the alias *"+anchor+" refers to a value that contains it, which has no finite form; write the value out in full"))
		return nil
	}
	if root.Kind != yaml.MappingNode {
		d.fail(documentPath, root, "the Installation must be a YAML mapping with the keys "+strings.Join(topLevelKeys, ", "))
		return nil
	}
	in := &Installation{}
	d.eachKey("", root, func(key string, keyNode, val *yaml.Node) {
		path := childPath("", key)
		in.keyOrder = append(in.keyOrder, key)
		switch key {
		case "occ":
			in.OCC = val
		case "presets":
			in.Presets = val
		case "backend":
			in.Backend = d.decodeBackends(path, val)
		case "drivers":
			in.Drivers = d.decodeDrivers(path, val)
		default:
			d.unknownKey("", key, keyNode, topLevelKeys, "")
		}
	})
	return in
}

// aliasCycle returns the anchor of an alias that points at one of its own ancestors, or "".
// yaml.v3 registers an anchor before parsing its children, so `&a [*a]` builds a cyclic tree
// that anything walking the carried blocks would follow forever.
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

// eachKey walks a mapping in document order, refusing duplicate and non-string keys.
func (d *decoder) eachKey(path string, n *yaml.Node, fn func(key string, keyNode, val *yaml.Node)) {
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			where := path
			if where == "" {
				where = documentPath
			}
			d.problems = append(d.problems, newProblem(where, nodeValue(k), "keys must be plain strings; this key is "+aKind(k)))
			continue
		}
		if seen[k.Value] {
			d.fail(childPath(path, k.Value), v, "the key appears more than once in the same mapping; keep exactly one")
			continue
		}
		if k.Anchor != "" {
			d.fail(childPath(path, k.Value), k, "YAML anchors and aliases are not accepted in blocks occ owns; write the value out in full.")
			continue
		}
		seen[k.Value] = true
		fn(k.Value, k, v)
	}
}

// unknownKey reports a key the block does not define. rule, when set, replaces the default text.
func (d *decoder) unknownKey(parent, key string, keyNode *yaml.Node, allowed []string, rule string) {
	where := parent
	if where == "" {
		where = "the top level"
	}
	if rule == "" {
		rule = fmt.Sprintf("unknown key %q in %s; allowed keys are %s.", key, where, strings.Join(allowed, ", "))
		if seedClosedBlocks[parent] {
			rule += " " + msgUnknownKeys
		} else {
			rule += " occ refuses unknown keys in every block it owns, so a misspelled key never falls back to its default."
		}
	}
	path := childPath(parent, key)
	d.failed[path] = true
	d.problems = append(d.problems, newProblem(path, key, rule))
}

// aKind is describeKind with its article, for "it is an integer".
func aKind(n *yaml.Node) string {
	k := describeKind(n)
	if strings.IndexAny(k[:1], "aeiou") == 0 {
		return "an " + k
	}
	return "a " + k
}

func describeKind(n *yaml.Node) string {
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

func (d *decoder) decodeBackends(path string, n *yaml.Node) []BackendEntry {
	if n.Anchor != "" {
		d.fail(path, n, "YAML anchors and aliases are not accepted in blocks occ owns; write the value out in full.")
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(path, n, "backend must be a list of backend entries (use [] for none); it is "+aKind(n)+".")
		return nil
	}
	out := make([]BackendEntry, 0, len(n.Content))
	for i, item := range n.Content {
		p := indexPath(path, i)
		if item.Kind != yaml.MappingNode {
			d.fail(p, item, "a backend entry must be a mapping with id, type and configuration; it is "+aKind(item)+".")
			continue
		}
		typ := mappingValue(item, "type")
		if typ == nil {
			d.problems = append(d.problems, missingProblem(childPath(p, "type"), "every backend entry needs a type; the OpenShell Sandbox Driver needs a backend entry with type openshell"))
			out = append(out, BackendEntry{Raw: item})
			continue
		}
		if typ.Kind != yaml.ScalarNode || typ.ShortTag() != "!!str" || typ.Value != BackendTypeOpenShell {
			out = append(out, BackendEntry{Raw: item})
			continue
		}
		var b OpenShellBackend
		d.decodeValue(p, item, reflect.ValueOf(&b).Elem())
		out = append(out, BackendEntry{OpenShell: &b})
	}
	return out
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func (d *decoder) decodeDrivers(path string, n *yaml.Node) Drivers {
	var out Drivers
	if n.Anchor != "" {
		d.fail(path, n, "YAML anchors and aliases are not accepted in blocks occ owns; write the value out in full.")
		return out
	}
	if n.Kind != yaml.MappingNode {
		d.fail(path, n, "drivers must be a mapping from driver kind (compute, sandbox, credential_gateway, …) to its selection; it is "+aKind(n)+".")
		return out
	}
	d.eachKey(path, n, func(key string, _, val *yaml.Node) {
		p := childPath(path, key)
		out.keyOrder = append(out.keyOrder, key)
		switch key {
		case "compute":
			out.Compute = &ComputeSelection{}
			d.decodeValue(p, val, reflect.ValueOf(out.Compute).Elem())
		case "sandbox":
			out.Sandbox = &SandboxDriver{}
			d.decodeValue(p, val, reflect.ValueOf(out.Sandbox).Elem())
		case "credential_gateway":
			out.CredentialGateway = &CredentialGatewayDriver{}
			d.decodeValue(p, val, reflect.ValueOf(out.CredentialGateway).Elem())
		default:
			out.Other = append(out.Other, NamedNode{Name: key, Node: val})
		}
	})
	return out
}

var (
	nodePtrType      = reflect.TypeOf((*yaml.Node)(nil))
	resourcesType    = reflect.TypeOf(Resources(nil))
	resourceListType = reflect.TypeOf(corev1.ResourceList(nil))
	gatewayType      = reflect.TypeOf(GatewayConfig{})
)

// fieldHints add the seed's rule to a type problem of a leaf field, so `runAsUser: 1000` is refused
// with the reason the value must be a string.
var fieldHints = map[reflect.Type]map[string]string{
	reflect.TypeOf(ProcessPolicy{}):    {"runAsUser": msgProcess, "runAsGroup": msgProcess},
	reflect.TypeOf(SandboxDataMount{}): {"readOnly": "OpenShell sandboxDataMount readOnly must be explicit (true or false)."},
	reflect.TypeOf(Endpoint{}):         {"ports": "Each port is a whole number from 1 to 65535."},
	reflect.TypeOf(GatewayConfig{}):    {"operatorNamespaceLabels": "Label values are strings: quote them (\"true\")."},
	reflect.TypeOf(Readiness{}):        {"timeoutMs": msgReadiness, "pollIntervalMs": msgReadiness, "podSelector": "Label values are strings: quote them (\"true\")."},
	reflect.TypeOf(SandboxConfiguration{}): {
		"startupDelayMs": "OpenShell startupDelayMs must be a positive safe integer no greater than 120000.",
		"providers":      msgStaticProviders,
	},
}

// connectionKeys are the gateway connection settings that live on the openshell Backend.
var connectionKeys = map[string]bool{
	"endpoint": true, "scheme": true, "serviceName": true, "port": true, "auth": true,
	"requestTimeoutMs": true, "rootCertificatePath": true,
}

// decodeValue decodes n into v, the typed part of the model at path.
func (d *decoder) decodeValue(path string, n *yaml.Node, v reflect.Value) {
	t := v.Type()
	if t == nodePtrType {
		// Blocks occ carries through are kept exactly as written.
		v.Set(reflect.ValueOf(n))
		return
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.fail(path, n, "YAML anchors and aliases are not accepted in blocks occ owns; write the value out in full.")
		return
	}
	switch t {
	case resourcesType:
		v.Set(reflect.ValueOf(d.decodeResources(path, n)))
		return
	case resourceListType:
		v.Set(reflect.ValueOf(d.decodeQuantities(path, n)))
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if isNull(n) {
			d.fail(path, n, "the key is present but empty (null); give it a value or remove the key")
			return
		}
		p := reflect.New(t.Elem())
		before := len(d.problems)
		d.decodeValue(path, n, p.Elem())
		if len(d.problems) == before || t.Elem().Kind() == reflect.Struct {
			// A scalar that failed to decode stays absent rather than becoming a zero value.
			v.Set(p)
		}
	case reflect.Struct:
		d.decodeStruct(path, n, v)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			rule := "must be a string; it is " + aKind(n)
			if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
				rule += fmt.Sprintf(`; quote it ("%s") so YAML reads it as a string.`, n.Value)
			}
			d.fail(path, n, rule)
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.fail(path, n, "must be true or false (an unquoted YAML boolean); it is "+aKind(n)+".")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
			d.fail(path, n, "must be a whole number (an unquoted YAML integer); it is "+aKind(n)+".")
			return
		}
		v.SetInt(i)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(path, n, "must be a list; it is "+aKind(n)+".")
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decodeValue(indexPath(path, i), item, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.fail(path, n, "must be a mapping of strings to strings; it is "+aKind(n)+".")
			return
		}
		m := reflect.MakeMapWithSize(t, len(n.Content)/2)
		d.eachKey(path, n, func(key string, _, val *yaml.Node) {
			e := reflect.New(t.Elem()).Elem()
			d.decodeValue(childPath(path, key), val, e)
			m.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), e)
		})
		v.Set(m)
	default:
		panic(fmt.Sprintf("installation: no decoder for %s at %s", t, path))
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
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
		tag := f.Tag.Get("yaml")
		if !f.IsExported() || tag == "" || tag == "-" {
			continue
		}
		out = append(out, structField{key: strings.Split(tag, ",")[0], index: i})
	}
	structFields.Store(t, out)
	return out
}

func keysOf(fields []structField) []string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.key
	}
	return keys
}

func (d *decoder) decodeStruct(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n, "must be a mapping with the keys "+strings.Join(keysOf(fieldsOf(v.Type())), ", ")+"; it is "+aKind(n))
		return
	}
	fields := fieldsOf(v.Type())
	d.eachKey(path, n, func(key string, keyNode, val *yaml.Node) {
		for _, f := range fields {
			if f.key == key {
				before := len(d.problems)
				d.decodeValue(childPath(path, key), val, v.Field(f.index))
				if hint := fieldHints[v.Type()][key]; hint != "" {
					for i := before; i < len(d.problems); i++ {
						d.problems[i].Message += " " + hint
					}
				}
				return
			}
		}
		rule := ""
		if v.Type() == gatewayType {
			rule = fmt.Sprintf("OpenShell gateway option %s belongs to the openshell Backend or is unsupported.", key)
			if connectionKeys[key] {
				rule += " Move the connection settings to the Backend. Sandbox gateway rejects connection fields: endpoint, scheme, serviceName, port, auth, requestTimeoutMs, and rootCertificatePath."
			} else {
				rule += " Allowed gateway keys are " + strings.Join(keysOf(fields), ", ") + "."
			}
		}
		d.unknownKey(path, key, keyNode, keysOf(fields), rule)
	})
}

// decodeQuantities reads agentResources requests or limits. Each value must be a YAML string:
// an unquoted number is refused so `cpu: 1` versus `cpu: "1"` is never a silent guess.
func (d *decoder) decodeQuantities(path string, n *yaml.Node) corev1.ResourceList {
	if n.Kind != yaml.MappingNode {
		d.fail(path, n, "must be a mapping from resource name to a quoted Kubernetes quantity (cpu: \"500m\"); it is "+aKind(n)+".")
		return nil
	}
	out := corev1.ResourceList{}
	d.eachKey(path, n, func(key string, _, val *yaml.Node) {
		p := childPath(path, key)
		if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!str" {
			d.fail(p, val, quantityRule+" This value is "+aKind(val)+"; quote it.")
			return
		}
		q, err := resource.ParseQuantity(val.Value)
		if err != nil {
			d.fail(p, val, quantityRule+" This value is not a Kubernetes quantity (for example \"500m\", \"2\", \"768Mi\", \"1Gi\").")
			return
		}
		out[corev1.ResourceName(key)] = q
	})
	return out
}

// quantityRule is seed 001's sentence on agentResources values.
const quantityRule = `Each kubernetes.agentResources.requests and limits value is a quoted, non-negative Kubernetes quantity (cpu: "500m"), and a request may not exceed its limit.`

// decodeResources reads a list of Kubernetes objects into unstructured form. Problems inside an
// object never repeat its values: a Secret's data must not reach any output.
func (d *decoder) decodeResources(path string, n *yaml.Node) Resources {
	if n.Kind != yaml.SequenceNode {
		d.fail(path, n, "must be a list of Kubernetes resource objects (use [] for none); it is "+aKind(n)+".")
		return nil
	}
	out := make(Resources, 0, len(n.Content))
	for i, item := range n.Content {
		p := indexPath(path, i)
		if item.Kind != yaml.MappingNode {
			d.failed[p] = true
			d.problems = append(d.problems, newProblem(p, "<"+describeKind(item)+">", "must be a Kubernetes resource object (a mapping with apiVersion, kind and metadata.name); it is "+aKind(item)+"."))
			continue
		}
		obj, ok := d.objectValue(p, item)
		if !ok {
			continue
		}
		out = append(out, unstructured.Unstructured{Object: obj.(map[string]any)})
	}
	return out
}

// objectValue converts a YAML node into the JSON-compatible values unstructured objects hold.
// Its problems name paths and key names only, never values.
func (d *decoder) objectValue(path string, n *yaml.Node) (any, bool) {
	bad := func(rule string) (any, bool) {
		d.failed[path] = true
		d.problems = append(d.problems, Problem{Path: path, Message: path + ": " + rule})
		return nil, false
	}
	if n.Anchor != "" {
		return bad("YAML anchors and aliases are not accepted inside Kubernetes resource objects; write the value out in full.")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return bad("YAML anchors and aliases are not accepted inside Kubernetes resource objects; write the value out in full.")
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" || k.Anchor != "" {
				bad("Kubernetes object keys must be plain strings, without YAML anchors or aliases")
				ok = false
				continue
			}
			if _, dup := m[k.Value]; dup {
				d.failed[childPath(path, k.Value)] = true
				d.problems = append(d.problems, Problem{Path: childPath(path, k.Value), Message: childPath(path, k.Value) + ": the key appears more than once in the same mapping; keep exactly one"})
				ok = false
				continue
			}
			val, good := d.objectValue(childPath(path, k.Value), v)
			ok = ok && good
			m[k.Value] = val
		}
		return m, ok
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		ok := true
		for i, item := range n.Content {
			val, good := d.objectValue(indexPath(path, i), item)
			ok = ok && good
			s[i] = val
		}
		return s, ok
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, true
		case "!!null":
			return nil, true
		case "!!bool":
			var b bool
			if n.Decode(&b) != nil {
				return bad("not a valid boolean")
			}
			return b, true
		case "!!int":
			var i int64
			if n.Decode(&i) == nil {
				return i, true
			}
			return bad("an integer outside the 64-bit range")
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return bad("numbers in Kubernetes objects must be finite decimal numbers")
			}
			return f, true
		}
		return bad("YAML tag " + n.Tag + " is not accepted inside Kubernetes resource objects")
	}
	return bad("not a YAML value")
}

// sortedKeys returns the keys of m in order, for stable messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
