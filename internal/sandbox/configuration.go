package sandbox

import (
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/strictyaml"
)

// maxConfigurationBytes bounds a native configuration file like a whole revision file.
const maxConfigurationBytes = 1 << 20

// ReadConfiguration reads a native Agent configuration file, a JSON or YAML object, as
// `occ sandbox configure-agent --configuration` takes it. YAML is converted strictly (a key
// given twice is refused rather than silently merged) and numbers keep their exact text, so the
// transform sees what the file says.
func ReadConfiguration(path string) (driver.Configuration, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("read Agent configuration %s: %w", path, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigurationBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read Agent configuration %s: %w", path, err)
	}
	if len(raw) > maxConfigurationBytes {
		return nil, fmt.Errorf("Agent configuration %s is larger than %d bytes (1 MiB), the most a revision file may be: it is not an Agent configuration", path, maxConfigurationBytes)
	}
	cfg, err := ParseConfiguration(raw)
	if err != nil {
		return nil, fmt.Errorf("Agent configuration %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfiguration decodes a native Agent configuration given as a JSON or YAML object with
// the strict decoder revision files use: a key given twice, an anchor or alias, or a value JSON
// cannot hold is refused with its path and line, and every number keeps its exact literal.
func ParseConfiguration(raw []byte) (driver.Configuration, error) {
	d := strictyaml.NewDecoder(&strictyaml.Options{Document: "the configuration", EmptyRule: "give a JSON or YAML object ({} when empty)"})
	root := d.Document(raw)
	if root == nil {
		return nil, d.Problems
	}
	if strictyaml.IsNull(root) {
		return driver.Configuration{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the configuration must be a JSON or YAML object (keys and values), not %s", strictyaml.AKind(root))
	}
	v, ok := d.JSONValue("", root)
	if !ok || len(d.Problems) > 0 {
		return nil, d.Problems.InDocumentOrder()
	}
	return driver.Configuration(v.(map[string]any)), nil
}
