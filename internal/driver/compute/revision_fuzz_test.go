package compute

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/strictyaml"
)

// FuzzParseRevisionFile feeds arbitrary bytes to the revision file decoder, as FuzzDecode does
// for the Installation. It never panics; a refusal is always a non-empty strictyaml.Problems
// whose every message starts with its path; and an accepted file validates and comes back equal
// from its JSON form (revision files are also read as JSON).
func FuzzParseRevisionFile(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(revisionsDir, "*.yaml"))
	invalid, _ := filepath.Glob(filepath.Join(revisionsDir, "invalid", "*.yaml"))
	for _, s := range append(seeds, invalid...) {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(minimalRevision))
	f.Fuzz(func(t *testing.T, data []byte) {
		rf, err := ParseRevisionFile(data)
		if err != nil {
			var problems strictyaml.Problems
			if !errors.As(err, &problems) || len(problems) == 0 {
				t.Fatalf("error %T %v is not a non-empty strictyaml.Problems", err, err)
			}
			if rf != nil {
				t.Fatal("a refused file also returned a revision")
			}
			for _, p := range problems {
				if p.Path == "" || !strings.HasPrefix(p.Message, p.Path) || p.Line < 0 {
					t.Fatalf("problem without its path or line: %+v", p)
				}
			}
			return
		}
		if err := rf.Validate(); err != nil {
			t.Fatalf("an accepted file does not validate: %v", err)
		}
		js, err := json.Marshal(rf)
		if err != nil {
			t.Fatalf("marshal an accepted revision: %v", err)
		}
		again, err := ParseRevisionFile(js)
		if err != nil {
			t.Fatalf("the JSON form of an accepted revision is refused: %v\ninput:\n%s\nJSON:\n%s", err, data, js)
		}
		if !reflect.DeepEqual(rf, again) {
			t.Fatalf("the JSON form decodes differently:\n%+v\n%+v", rf, again)
		}
	})
}
