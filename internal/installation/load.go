package installation

import (
	"fmt"
	"io"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/strictyaml"
)

// MaxBytes bounds an Installation: a development Installation with the rendered workspace
// chart is a few kilobytes and a production one well under a megabyte, so anything larger (a
// device such as /dev/zero, a log, an image passed by mistake) is refused before it is read
// into memory or parsed.
const MaxBytes = 4 << 20

// Read reads an Installation of at most MaxBytes from r; name says where it came from.
func Read(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read Installation %s: %w", name, err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("Installation %s is larger than %d bytes (4 MiB), the most an Installation may be: it is not an Installation file", name, MaxBytes)
	}
	return data, nil
}

// ReadFile reads the Installation at path ("-" for stdin), at most MaxBytes.
func ReadFile(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		if stdin == nil {
			return nil, fmt.Errorf("read Installation from standard input: no standard input")
		}
		return Read(stdin, "(standard input)")
	}
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("read Installation %s: %w (use - to read it from standard input)", path, err)
	}
	defer f.Close()
	return Read(f, path)
}

// Load reads, decodes and validates the Installation at path. It returns every problem found,
// decode and validation problems together, as Problems; the Installation is returned only when
// there are none.
func Load(path string) (*Installation, error) {
	return LoadFrom(path, nil)
}

// LoadFrom is Load that reads stdin when path is "-".
func LoadFrom(path string, stdin io.Reader) (*Installation, error) {
	data, err := ReadFile(path, stdin)
	if err != nil {
		return nil, err
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
