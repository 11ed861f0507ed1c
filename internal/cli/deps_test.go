package cli

import (
	"go/build"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/openclaw/occ"

// The shipped binary carries product code only: a release build of occ must not link the
// testing package or any of our own …test packages (the emulator ships, so it is product
// code). The walk follows every package of this module that cmd/occ reaches, reading the same
// non-test files (and build constraints) the compiler would.
func TestBinaryLinksNoTestPackages(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx := build.Default
	ctx.CgoEnabled = false
	seen := map[string]bool{}
	var bad []string
	var visit func(importPath, from string)
	visit = func(importPath, from string) {
		if seen[importPath] {
			return
		}
		seen[importPath] = true
		if strings.HasSuffix(path.Base(importPath), "test") {
			bad = append(bad, importPath+" (imported by "+from+")")
		}
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(importPath, modulePath)))
		pkg, err := ctx.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("read package %s: %v", importPath, err)
		}
		for _, imp := range pkg.Imports {
			switch {
			case imp == "testing" || strings.HasPrefix(imp, "testing/"):
				bad = append(bad, imp+" (imported by "+importPath+")")
			case imp == modulePath || strings.HasPrefix(imp, modulePath+"/"):
				visit(imp, importPath)
			}
		}
	}
	visit(modulePath+"/cmd/occ", "")
	if !seen[modulePath+"/internal/gateway/emulator"] || !seen[modulePath+"/internal/cli"] {
		t.Fatalf("the walk missed packages the binary links: %v", slices.Sorted(maps.Keys(seen)))
	}
	for _, b := range bad {
		t.Errorf("the occ binary links test code: %s", b)
	}
}
