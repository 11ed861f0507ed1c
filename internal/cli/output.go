package cli

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
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
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode YAML output: %w", err)
		}
		_, err = g.Stdout.Write(b)
		return err
	default:
		return table()
	}
}
