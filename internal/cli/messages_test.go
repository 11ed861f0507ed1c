package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/state"
)

// A newcomer's mistakes get messages in occ's terms: the setting and the value, never a Go
// parser's or type's words (strconv.ParseInt, struct { Version int … }, L---------), and no
// message repeats itself.
func TestMessagesSpeakOccsTerms(t *testing.T) {
	dir := isolate(t)
	// A state directory as occ dev up makes it, whose state.json each case replaces.
	recorded := filepath.Join(dir, "recorded")
	if err := os.Mkdir(recorded, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(recorded, state.MarkerName), []byte(state.MarkerContent), 0o600); err != nil {
		t.Fatal(err)
	}
	stateFile := filepath.Join(recorded, state.FileName)
	writeState := func(content string) func(t *testing.T) {
		return func(t *testing.T) {
			os.Remove(stateFile)
			if err := os.WriteFile(stateFile, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T)
		env     map[string]string
		args    []string
		code    int
		want    []string
		never   []string
	}{
		{name: "a fraction for --tail", args: []string{"dev", "logs", "--tail", "1.5", "--state-dir", recorded}, code: 2,
			want: []string{`--tail "1.5" is not a whole number`}, never: []string{"strconv", "ParseInt"}},
		{name: "a word in OCC_TAIL", env: map[string]string{"OCC_TAIL": "all"}, args: []string{"dev", "logs", "--state-dir", recorded}, code: 2,
			want: []string{`OCC_TAIL "all" is not a whole number`}, never: []string{"strconv"}},
		{name: "a repository that does not exist", args: []string{"dev", "up", "--dry-run", "--repository", filepath.Join(dir, "nonexistent"), "--state-dir", filepath.Join(dir, "s1")}, code: 2,
			want: []string{`--repository "` + filepath.Join(dir, "nonexistent") + `" is not an OpenClaw Enterprise checkout: it does not exist`}, never: []string{"lstat"}},
		{name: "state.json is a symlink", prepare: func(t *testing.T) {
			os.Remove(stateFile)
			if err := os.Symlink("/etc/hostname", stateFile); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"dev", "status", "--state-dir", recorded}, code: 1,
			want: []string{stateFile + " must be a regular file, but it is a symlink"}, never: []string{"L---------"}},
		{name: "state.json is a JSON list", prepare: writeState("[]"), args: []string{"dev", "status", "--state-dir", recorded}, code: 1,
			want: []string{"it is not a JSON object, as occ dev up writes it"}, never: []string{"struct {", "Go value"}},
		{name: "state.json holds a wrong type", prepare: writeState(`{"version": 2, "objects": {}}`), args: []string{"dev", "status", "--state-dir", recorded}, code: 1,
			want: []string{"objects holds a JSON object where occ dev up writes a list"}, never: []string{"Go value", "[]state.Object"}},
		{name: "state.json cut short", prepare: writeState(`{"version": 2,`), args: []string{"dev", "status", "--state-dir", recorded}, code: 1,
			want: []string{"it ends in the middle of its JSON"}, never: []string{"unexpected EOF"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if tc.prepare != nil {
				tc.prepare(t)
			}
			var out bytes.Buffer
			code := Execute(context.Background(), tc.args, strings.NewReader(""), &out, &out)
			text := out.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, text)
			}
			for _, w := range tc.want {
				if strings.Count(text, w) != 1 {
					t.Errorf("the message should say %q once:\n%s", w, text)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(text, n) {
					t.Errorf("the message says %q:\n%s", n, text)
				}
			}
		})
	}
}
