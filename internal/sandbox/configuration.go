package sandbox

import (
	"bytes"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/driver"
)

// ReadConfiguration reads a native Agent configuration file, a JSON or YAML object, as
// `occ sandbox configure-agent --configuration` takes it. YAML is converted strictly (a key
// given twice is refused rather than silently merged) and numbers keep their exact text, so the
// transform sees what the file says.
func ReadConfiguration(path string) (driver.Configuration, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read Agent configuration %s: %w", path, err)
	}
	cfg, err := ParseConfiguration(raw)
	if err != nil {
		return nil, fmt.Errorf("Agent configuration %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfiguration decodes a native Agent configuration given as a JSON or YAML object.
func ParseConfiguration(raw []byte) (driver.Configuration, error) {
	js, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return nil, fmt.Errorf("decode YAML: %w", err)
	}
	// The driver's decoder would say only that an array cannot become a map.
	if trimmed := bytes.TrimSpace(js); len(trimmed) > 0 && trimmed[0] != '{' && !bytes.Equal(trimmed, []byte("null")) {
		return nil, fmt.Errorf("the configuration must be a JSON or YAML object (keys and values), not %s", jsonKind(trimmed[0]))
	}
	return driver.ParseConfiguration(js)
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
