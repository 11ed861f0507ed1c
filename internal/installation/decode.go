package installation

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"go.yaml.in/yaml/v3"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/strictyaml"
)

// Decode parses an Installation strictly. An unknown key in any block occ owns is refused at
// every nesting level, keys are matched exactly (no case folding), a value of the wrong YAML type
// is refused, and every such problem is reported with its YAML path and line. Decode does not
// apply the validation rules; Load and Validate do.
//
// When the document has problems, Decode returns them as Problems together with the part of the
// model it could decode (nil only when the document is not a YAML mapping at all), so a caller
// can still run Validate and report everything at once.
func Decode(data []byte) (*Installation, error) {
	d := &decoder{strictyaml.NewDecoder(decodeOptions)}
	in := d.decodeDocument(data)
	if in != nil {
		in.failed = d.Failed
		in.source = d.Root()
	}
	return in, Problems(d.Problems).Err()
}

// decoder is the shared strict decoder with the Installation's own blocks added.
type decoder struct{ *strictyaml.Decoder }

// decodeOptions adapt the shared strict decoder to the Installation: its typed Kubernetes
// objects and quantities, the seed's sentences on field problems and unknown keys, and
// credential redaction in every value a message shows.
var decodeOptions = &strictyaml.Options{
	Document:  "the Installation",
	EmptyRule: "it needs at least backend and drivers",
	Custom: map[reflect.Type]func(*strictyaml.Decoder, string, *yaml.Node, reflect.Value){
		reflect.TypeOf(Resources(nil)): func(d *strictyaml.Decoder, path string, n *yaml.Node, v reflect.Value) {
			v.Set(reflect.ValueOf(decoder{d}.decodeResources(path, n)))
		},
		reflect.TypeOf(corev1.ResourceList(nil)): func(d *strictyaml.Decoder, path string, n *yaml.Node, v reflect.Value) {
			v.Set(reflect.ValueOf(decoder{d}.decodeQuantities(path, n)))
		},
	},
	Hints:          fieldHints,
	UnknownKeyRule: unknownKeyRule,
	ShowValue:      contract.RedactURL,
}

// unknownKeyRule words an unknown key: a gateway connection setting is sent to the Backend,
// and the closed blocks of the Sandbox configuration get the SandboxDriver's sentence on
// unknown keys.
func unknownKeyRule(parent string, t reflect.Type, key string, allowed []string) string {
	if t == gatewayType {
		rule := fmt.Sprintf("OpenShell gateway option %s belongs to the openshell Backend or is unsupported.", key)
		if connectionKeys[key] {
			return rule + " Move the connection settings to the Backend. Sandbox gateway rejects connection fields: endpoint, scheme, serviceName, port, auth, requestTimeoutMs, and rootCertificatePath."
		}
		return rule + " Allowed gateway keys are " + strings.Join(allowed, ", ") + "."
	}
	if seedClosedBlocks[parent] {
		return fmt.Sprintf("unknown key %q in %s; allowed keys are %s.%s %s", key, parent, strings.Join(allowed, ", "), strictyaml.CaseHint(key, allowed), msgUnknownKeys)
	}
	return ""
}

// seedClosedBlocks are the blocks in which the SandboxDriver's startup refuses an unknown key,
// as its sentence on unknown keys names them.
var seedClosedBlocks = map[string]bool{
	pathK8s: true, pathK8s + ".serviceAccount": true, pathK8s + ".sandboxDataMount": true,
	pathK8s + ".agentResources": true, pathPolicy: true, pathPolicy + ".process": true,
	pathGateway + ".readiness": true,
}

var topLevelKeys = []string{"occ", "backend", "drivers", "presets"}

func (d decoder) decodeDocument(data []byte) *Installation {
	root := d.Document(data)
	if root == nil {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		d.Fail(documentPath, root, "the Installation must be a YAML mapping with the keys "+strings.Join(topLevelKeys, ", "))
		return nil
	}
	in := &Installation{}
	d.EachKey("", root, func(key string, keyNode, val *yaml.Node) {
		path := childPath("", key)
		in.keyOrder = append(in.keyOrder, key)
		switch key {
		case "occ":
			d.CheckKeys(path, val)
			in.OCC = val
		case "presets":
			d.CheckKeys(path, val)
			in.Presets = val
		case "backend":
			in.Backend = d.decodeBackends(path, val)
		case "drivers":
			in.Drivers = d.decodeDrivers(path, val)
		default:
			d.UnknownKey("", key, keyNode, topLevelKeys, "")
		}
	})
	return in
}

func (d decoder) decodeBackends(path string, n *yaml.Node) []BackendEntry {
	if n.Anchor != "" {
		d.Fail(path, n, strictyaml.MsgNoAliases)
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.Fail(path, n, "backend must be a list of backend entries (use [] for none); it is "+strictyaml.AKind(n)+".")
		return nil
	}
	out := make([]BackendEntry, 0, len(n.Content))
	for i, item := range n.Content {
		p := indexPath(path, i)
		if item.Kind != yaml.MappingNode {
			d.Fail(p, item, "a backend entry must be a mapping with id, type and configuration; it is "+strictyaml.AKind(item)+".")
			continue
		}
		typ := mappingValue(item, "type")
		if typ == nil || typ.Kind != yaml.ScalarNode || typ.ShortTag() != "!!str" || typ.Value != BackendTypeOpenShell {
			// Another backend's entry is carried through; only a key given twice is refused.
			d.CheckKeys(p, item)
		}
		if typ == nil {
			d.Add(missingProblem(childPath(p, "type"), d.Line(p), "every backend entry needs a type; the OpenShell Sandbox Driver needs a backend entry with type openshell"))
			out = append(out, BackendEntry{Raw: item})
			continue
		}
		if typ.Kind != yaml.ScalarNode || typ.ShortTag() != "!!str" || typ.Value != BackendTypeOpenShell {
			out = append(out, BackendEntry{Raw: item})
			continue
		}
		var b OpenShellBackend
		d.Value(p, item, reflect.ValueOf(&b).Elem())
		out = append(out, BackendEntry{OpenShell: &b})
	}
	return out
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node { return strictyaml.MappingValue(n, key) }

func (d decoder) decodeDrivers(path string, n *yaml.Node) Drivers {
	var out Drivers
	if n.Anchor != "" {
		d.Fail(path, n, strictyaml.MsgNoAliases)
		return out
	}
	if n.Kind != yaml.MappingNode {
		d.Fail(path, n, "drivers must be a mapping from driver kind (compute, sandbox, credential_gateway, …) to its selection; it is "+strictyaml.AKind(n)+".")
		return out
	}
	d.EachKey(path, n, func(key string, _, val *yaml.Node) {
		p := childPath(path, key)
		out.keyOrder = append(out.keyOrder, key)
		switch key {
		case "compute":
			out.Compute = &ComputeSelection{}
			d.Value(p, val, reflect.ValueOf(out.Compute).Elem())
		case "sandbox":
			out.Sandbox = &SandboxDriver{}
			d.Value(p, val, reflect.ValueOf(out.Sandbox).Elem())
		case "credential_gateway":
			out.CredentialGateway = &CredentialGatewayDriver{}
			d.Value(p, val, reflect.ValueOf(out.CredentialGateway).Elem())
		default:
			d.CheckKeys(p, val)
			out.Other = append(out.Other, NamedNode{Name: key, Node: val})
		}
	})
	return out
}

var gatewayType = reflect.TypeOf(GatewayConfig{})

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

// decodeQuantities reads agentResources requests or limits. Each value must be a YAML string:
// an unquoted number is refused so `cpu: 1` versus `cpu: "1"` is never a silent guess.
func (d decoder) decodeQuantities(path string, n *yaml.Node) corev1.ResourceList {
	if n.Kind != yaml.MappingNode {
		d.Fail(path, n, "must be a mapping from resource name to a quoted Kubernetes quantity (cpu: \"500m\"); it is "+strictyaml.AKind(n)+".")
		return nil
	}
	out := corev1.ResourceList{}
	d.EachKey(path, n, func(key string, _, val *yaml.Node) {
		p := childPath(path, key)
		if val.Kind != yaml.ScalarNode || val.ShortTag() != "!!str" {
			d.Fail(p, val, quantityRule+" This value is "+strictyaml.AKind(val)+"; quote it.")
			return
		}
		q, err := resource.ParseQuantity(val.Value)
		if err != nil {
			d.Fail(p, val, quantityRule+" This value is not a Kubernetes quantity (for example \"500m\", \"2\", \"768Mi\", \"1Gi\").")
			return
		}
		out[corev1.ResourceName(key)] = q
	})
	return out
}

// quantityRule is the SandboxDriver's sentence on agentResources values.
const quantityRule = `Each kubernetes.agentResources.requests and limits value is a quoted, non-negative Kubernetes quantity (cpu: "500m"), and a request may not exceed its limit.`

// decodeResources reads a list of Kubernetes objects into unstructured form. Problems inside an
// object never repeat its values: a Secret's data must not reach any output.
func (d decoder) decodeResources(path string, n *yaml.Node) Resources {
	if n.Kind != yaml.SequenceNode {
		d.Fail(path, n, "must be a list of Kubernetes resource objects (use [] for none); it is "+strictyaml.AKind(n)+".")
		return nil
	}
	out := make(Resources, 0, len(n.Content))
	for i, item := range n.Content {
		p := indexPath(path, i)
		if item.Kind != yaml.MappingNode {
			d.Failed[p] = true
			d.Add(newProblem(p, d.Line(p), "<"+strictyaml.DescribeKind(item)+">", "must be a Kubernetes resource object (a mapping with apiVersion, kind and metadata.name); it is "+strictyaml.AKind(item)+"."))
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
func (d decoder) objectValue(path string, n *yaml.Node) (any, bool) {
	bad := func(rule string) (any, bool) {
		d.objectFail(path, rule)
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
				d.objectFail(childPath(path, k.Value), "the key appears more than once in the same mapping; keep exactly one")
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

// objectFail records a problem inside a Kubernetes object. It names the path and line only:
// the object's values (a Secret's data) never reach a message.
func (d decoder) objectFail(path, rule string) {
	d.Failed[path] = true
	line := d.Line(path)
	msg := path + ": " + rule
	if line > 0 {
		msg = fmt.Sprintf("%s (line %d): %s", path, line, rule)
	}
	d.Add(Problem{Path: path, Line: line, Message: msg})
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
