package pins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/openclaw/occ/internal/fsutil"
)

// Encode writes set as a pin file: header as comment lines, then the set with its keys in the
// order of the embedded file. The result is parsed back before it is returned, so Encode only
// ever produces a file that Load accepts.
func Encode(set *Set, header string) ([]byte, error) {
	j, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("encode pin set: %w", err)
	}
	// JSON is YAML: decoding it into a node keeps the struct's field order, which a map would
	// lose; only the flow style of JSON has to go.
	var doc yaml.Node
	if err := yaml.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("encode pin set: %w", err)
	}
	blockStyle(&doc)
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header != "" {
			b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode pin set: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode pin set: %w", err)
	}
	if _, err := Parse(b.Bytes(), "the pin file being written"); err != nil {
		return nil, fmt.Errorf("the encoded pin set does not parse back: %w", err)
	}
	return b.Bytes(), nil
}

// blockStyle turns the nodes of decoded JSON into the block style of the embedded file; long
// texts (notes) become folded scalars, which wrap instead of running off the screen.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && len(n.Value) > 80 && strings.Contains(n.Value, " ") {
		n.Style = yaml.FoldedStyle
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// ExistsError is a pin file that is already there and was not to be replaced.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("pin file %s already exists; choose another path, or pass --force to replace it", e.Path)
}

// WriteFile writes a pin file at path. Without replace the file must not exist yet (O_EXCL), so
// a pin file in use is never overwritten by accident; with replace an existing file is replaced
// atomically, so a reader sees the old file or the new one, never a part.
func WriteFile(path string, data []byte, replace bool) error {
	if replace {
		return fsutil.WriteFileAtomic(path, data, 0o644)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return &ExistsError{Path: path}
	}
	if err != nil {
		return fmt.Errorf("write pin file %s: %w", path, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		// Half a pin file is worse than none: it would fail later, far from its cause.
		os.Remove(path)
		return fmt.Errorf("write pin file %s: %w", path, err)
	}
	return nil
}
