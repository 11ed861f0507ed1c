package installation

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fixtureDir holds dev.yaml and the invalid cases shared with the CLI tests.
const fixtureDir = "../../testdata/installation"

// fixture is one invalid Installation with the problem it must produce, read from the header
// comments of its file:
//
//	# path: <YAML path of the expected problem>
//	# expect: <substring of that problem's message> (repeatable)
//	# problems: <exact number of problems>
//	# canary: <secret value that must never be printed> (optional)
type fixture struct {
	name     string
	data     []byte
	path     string
	expects  []string
	problems int
	canary   string
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixtureDir, "invalid", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid fixtures under %s (err %v)", fixtureDir, err)
	}
	var out []fixture
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fx := fixture{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), data: data, problems: -1}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "# ") {
				break
			}
			key, val, _ := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
			switch key {
			case "path":
				fx.path = val
			case "expect":
				fx.expects = append(fx.expects, val)
			case "problems":
				fx.problems, _ = strconv.Atoi(val)
			case "canary":
				fx.canary = val
			}
		}
		if fx.path == "" || len(fx.expects) == 0 || fx.problems < 1 {
			t.Fatalf("fixture %s lacks a path, expect or problems header", f)
		}
		out = append(out, fx)
	}
	return out
}
