package repocheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// engineClient is the import path of the container engine's API client.
const engineClient = "github.com/docker/docker/client"

// engineClientImporters are the directories, relative to the repository root, whose product files
// may import the engine client: the engine package, whose API interface is how everything else
// drives Docker or Podman, and the test beds, which only tests import.
var engineClientImporters = []string{"internal/occdev/docker", "internal/testbed"}

// A product file outside the engine package that reaches for the Docker client drives the engine
// past the seam, so Podman's implementation of the API never sees its calls: the check names
// the file, so the call goes through docker.API instead.
func TestOnlyTheEnginePackageImportsTheEngineClient(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range offendingEngineClientImports(t, root) {
		t.Errorf("%s imports %s; only the engine package (internal/occdev/docker) may: drive the engine through docker.API (an Engine's API), adding the call to that interface if it is new", rel, engineClient)
	}
}

// offendingEngineClientImports lists the non-test Go files under root, outside the allowed
// directories, that import the engine client.
func offendingEngineClientImports(t *testing.T, root string) []string {
	t.Helper()
	var offending []string
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			for _, allowed := range engineClientImporters {
				if rel == allowed || strings.HasPrefix(rel, allowed+"/") {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, err := strconv.Unquote(imp.Path.Value); err == nil && p == engineClient {
				offending = append(offending, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the product's files; a wrong root would pass vacuously.
	if files < 100 {
		t.Fatalf("checked only %d Go files under %s; the walk did not reach the source tree", files, root)
	}
	return offending
}
