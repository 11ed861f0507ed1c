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

// A bad `occ dev` setting is named by where its value came from (the flag, the variable, the
// config file's key), and the fix speaks of that source; the generic OCC_<FLAG> variables give
// only settings without a variable of their own, so `occ sandbox`'s OCC_NAMESPACE never reaches
// `occ dev up`.
func TestABadDevSettingNamesItsSource(t *testing.T) {
	dir := isolate(t)
	const bad = "Bad_Name"
	dryRun := []string{"dev", "up", "--dry-run", "--cluster-provider", "k3d", "--state-dir", filepath.Join(dir, "state")}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		config string
		args   []string
		want   []string
	}{
		{name: "flag", args: append(dryRun, "--cluster-name", bad), want: []string{`--cluster-name "Bad_Name" must start with`, "or drop --cluster-name for a random one"}},
		{name: "variable", env: map[string]string{"OCC_DEVELOPMENT_KUBERNETES_CLUSTER": bad}, args: dryRun,
			want: []string{`OCC_DEVELOPMENT_KUBERNETES_CLUSTER "Bad_Name" must start with`, "or unset OCC_DEVELOPMENT_KUBERNETES_CLUSTER for a random one"}},
		{name: "config file", config: "cluster-name: " + bad + "\n", args: dryRun,
			want: []string{`cluster-name in the config file "Bad_Name" must start with`, "or remove cluster-name in the config file for a random one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			config := filepath.Join(dir, "occ", "config.yaml")
			os.Remove(config)
			if tc.config != "" {
				if err := os.MkdirAll(filepath.Dir(config), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(config, []byte(tc.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			code := Execute(context.Background(), tc.args, strings.NewReader(""), &out, &out)
			for _, w := range tc.want {
				if code != 2 || !strings.Contains(out.String(), w) {
					t.Errorf("exit %d, want 2 saying %q:\n%s", code, w, out.String())
				}
			}
			if tc.name != "variable" && strings.Contains(out.String(), "OCC_DEVELOPMENT_KUBERNETES_CLUSTER") {
				t.Errorf("the message blames OCC_DEVELOPMENT_KUBERNETES_CLUSTER, which nobody set:\n%s", out.String())
			}
		})
	}
	t.Run("OCC_NAMESPACE is occ sandbox's", func(t *testing.T) {
		t.Setenv("OCC_NAMESPACE", "Bad_Namespace")
		var out bytes.Buffer
		Execute(context.Background(), append(dryRun, "-o", "json"), strings.NewReader(""), &out, &out)
		if strings.Contains(out.String(), "Bad_Namespace") {
			t.Errorf("occ dev up read OCC_NAMESPACE:\n%s", out.String())
		}
	})
}
