package cli

import (
	"encoding/json"
	"fmt"

	"github.com/openclaw/occ/internal/strictyaml"
)

// print writes v as JSON or YAML when -o asks for it, and otherwise calls table, which writes
// the human form.
func (g *Globals) print(v any, table func() error) error {
	switch g.Output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode JSON output: %w", err)
		}
		_, err = fmt.Fprintf(g.Stdout, "%s\n", b)
		return err
	case "yaml":
		b, err := marshalYAML(v)
		if err != nil {
			return err
		}
		_, err = g.Stdout.Write(b)
		return err
	default:
		return table()
	}
}

// marshalYAML writes v as YAML through its JSON form, keeping every number literal exactly (a
// frozen configuration's 12345678901234567890123 or 1e400 stays that number), so -o yaml and
// -o json always print the same values.
func marshalYAML(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode YAML output: %w", err)
	}
	b, err := strictyaml.JSONToYAML(js)
	if err != nil {
		return nil, fmt.Errorf("encode YAML output: %w", err)
	}
	return b, nil
}
