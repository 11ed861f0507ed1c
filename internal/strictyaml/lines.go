package strictyaml

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LineOf returns the line of the value at path (as ChildPath and IndexPath write it) in the
// document rooted at root: the line of its key for a mapping entry, of the item for a list
// element. For a path that does not exist it returns the line of the deepest part that does, the
// block the missing key belongs in, or 0 when not even the first part exists. It is called only
// when a problem is reported, so a valid document costs nothing.
func LineOf(root *yaml.Node, path string) int {
	line, _ := Locate(root, path)
	return line
}

// Locate is LineOf that also reports whether the whole path exists in the document.
func Locate(root *yaml.Node, path string) (line int, found bool) {
	line, n := locate(root, path)
	return line, n != nil
}

// NodeAt returns the node at path in the document rooted at root, or nil.
func NodeAt(root *yaml.Node, path string) *yaml.Node {
	_, n := locate(root, path)
	return n
}

// locate walks path from root and returns the line reached and the node at path (nil when the
// whole path does not exist).
func locate(root *yaml.Node, path string) (line int, node *yaml.Node) {
	if root == nil || path == "" || path == DocumentPath {
		return 0, nil
	}
	n := root
	for path != "" {
		n = resolveAlias(n)
		var next *yaml.Node
		nextLine := 0
		switch {
		case path[0] == '.':
			path = path[1:]
			continue
		case strings.HasPrefix(path, `["`):
			quoted, err := strconv.QuotedPrefix(path[1:])
			if err != nil || !strings.HasPrefix(path[1+len(quoted):], "]") {
				return line, nil
			}
			key, _ := strconv.Unquote(quoted)
			path = path[1+len(quoted)+1:]
			next, nextLine = mappingEntry(n, key)
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:max(end, 1)])
			if end < 0 || err != nil {
				return line, nil
			}
			path = path[end+1:]
			if n.Kind == yaml.SequenceNode && i >= 0 && i < len(n.Content) {
				next, nextLine = n.Content[i], n.Content[i].Line
			}
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			key := path[:end]
			path = path[end:]
			next, nextLine = mappingEntry(n, key)
		}
		if next == nil {
			return line, nil
		}
		n, line = next, nextLine
	}
	return line, resolveAlias(n)
}

// mappingEntry returns the value of key in mapping n and the line of the key.
func mappingEntry(n *yaml.Node, key string) (*yaml.Node, int) {
	if n == nil {
		return nil, 0
	}
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return n.Content[i+1], k.Line
		}
	}
	return nil, 0
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}
