package installation

import (
	"fmt"
	"os"

	"github.com/openclaw/occ/internal/strictyaml"
)

// Load reads, decodes and validates the Installation at path. It returns every problem found,
// decode and validation problems together, as Problems; the Installation is returned only when
// there are none.
func Load(path string) (*Installation, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read Installation %s: %w", path, err)
	}
	return Parse(data)
}

// Parse decodes and validates an Installation held in memory, like Load. Its problems are in
// document order, decode and validation problems together.
func Parse(data []byte) (*Installation, error) {
	in, err := Decode(data)
	var problems Problems
	if err != nil {
		problems = append(problems, err.(Problems)...)
	}
	if in != nil {
		problems = append(problems, in.Validate()...)
	}
	if len(problems) > 0 {
		return nil, Problems(strictyaml.Problems(problems).InDocumentOrder())
	}
	return in, nil
}
