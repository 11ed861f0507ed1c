package kubernetes

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chartCopy copies the fixture checkout's chart into a directory of the test, applies edit
// (file name relative to the chart, to new content or, with old set, a replacement) and loads it.
func chartCopy(t *testing.T, edits ...[3]string) string {
	t.Helper()
	src := filepath.Join(fixtureCheckout, ChartPath)
	dst := filepath.Join(t.TempDir(), "checkout")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, ChartPath, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		p := filepath.Join(dst, ChartPath, e[0])
		content := e[2]
		if e[1] != "" {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), e[1]) {
				t.Fatalf("%s lacks %q", e[0], e[1])
			}
			content = strings.Replace(string(b), e[1], e[2], 1)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// The preflight render of the OCE chart uses the values of the install with placeholders of
// the right shape for what the cluster decides later: the fixture chart (the real chart's
// validation shapes) accepts them, for a built controller and for a selected one.
func TestPlaceholderValuesPassTheChart(t *testing.T) {
	ch := fixtureChart(t)
	for _, controller := range []string{"openclaw-enterprise-controller:kubernetes-quickstart", "ghcr.io/openclaw/controller@sha256:" + strings.Repeat("c", 64)} {
		in, err := PlaceholderValuesInput("oce-system", controller, 3000)
		if err != nil {
			t.Fatal(err)
		}
		v, err := BuildValues(in)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckChart(ch, "oce-system", v); err != nil {
			t.Errorf("controller %s: %v", controller, err)
		}
	}
	in, _ := PlaceholderValuesInput("oce-system", "openclaw-enterprise-controller:kubernetes-quickstart", 3000)
	if in.ControllerImage != "docker.io/library/openclaw-enterprise-controller@sha256:"+strings.Repeat("0", 64) {
		t.Errorf("placeholder controller %q", in.ControllerImage)
	}
	if _, err := PlaceholderValuesInput("oce-system", "Not A Reference", 3000); err == nil {
		t.Error("an unparsable controller reference was accepted")
	}
}

// A checkout whose chart is newer than occ: a new `fail` rule for a value occ does not set, a
// key occ sets that the chart has retired, a template syntax error, a rendered document that is
// not YAML and a values schema occ's values break. Each is refused by CheckChart with the
// chart's own message, before anything exists.
func TestCheckChartRefusesWhatTheInstallWouldMeet(t *testing.T) {
	values := devValues(t)
	cases := []struct {
		name string
		edit [3]string
		want []string
	}{
		{"a fail rule for a new required value",
			[3]string{"templates/_helpers.tpl", `{{- define "openclaw.validate" -}}`, "{{- define \"openclaw.validate\" -}}\n{{- if not .Values.installation.region -}}{{- fail \"installation.region must name the data residency region\" -}}{{- end -}}"},
			[]string{"installation.region must name the data residency region", "openclaw-enterprise 0.1.0", "nothing was created", "update occ"}},
		{"a key occ sets is retired",
			[3]string{"templates/_helpers.tpl", `{{- define "openclaw.validate" -}}`, "{{- define \"openclaw.validate\" -}}\n{{- if hasKey .Values.cluster \"port\" -}}{{- fail \"cluster.port is retired; configure cluster.endpoints\" -}}{{- end -}}"},
			[]string{"cluster.port is retired; configure cluster.endpoints"}},
		{"a template syntax error",
			[3]string{"templates/service.yaml", "", "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name \n"},
			[]string{"templates/service.yaml", "parse error"}},
		{"a rendered document that is not YAML",
			[3]string{"templates/extra.yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: [unclosed\n"},
			[]string{"templates/extra.yaml", "YAML parse error"}},
		{"a values schema",
			[3]string{"values.schema.json", "", `{"type":"object","properties":{"api":{"type":"object","properties":{"clients":{"type":"array","maxItems":0}}}}}`},
			[]string{"values don't meet the specifications of the schema", "/api/clients"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch, err := LoadChart(chartCopy(t, c.edit))
			if err != nil {
				t.Fatal(err)
			}
			err = CheckChart(ch, "oce-system", values)
			var ce *ChartError
			if !errors.As(err, &ce) {
				t.Fatalf("CheckChart: %v, want a ChartError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// The fixture chart, like the real one, refuses the keys it has retired with the real chart's
// messages.
func TestFixtureChartRefusesRetiredKeys(t *testing.T) {
	ch := fixtureChart(t)
	for key, want := range map[string]string{
		"integrations":   "integrations is retired; configure ChatGPT packaging under backend.chatgpt",
		"workspaceFiles": "workspaceFiles is retired; configure private Envoy Gateway routing under gatewayRouting",
		"database.cidr":  "database.cidr is retired; configure database.cidrs with explicit IPv4 /32 hosts",
		"cluster.cidr":   "cluster.cidr is retired; configure cluster.cidrs with explicit IPv4 /32 hosts",
	} {
		t.Run(key, func(t *testing.T) {
			m, err := devValues(t).Map()
			if err != nil {
				t.Fatal(err)
			}
			if parent, leaf, ok := strings.Cut(key, "."); ok {
				m[parent].(map[string]any)[leaf] = "10.0.0.1/32"
			} else {
				m[key] = map[string]any{}
			}
			if _, err := render(t, ch, m); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("render: %v, want %q", err, want)
			}
		})
	}
}

// The cost the chart's preflight render adds to every `up` and dry run of the Kubernetes-only
// profile (chart loaded once, as the plan does).
func BenchmarkCheckChart(b *testing.B) {
	ch, err := LoadChart(fixtureCheckout)
	if err != nil {
		b.Fatal(err)
	}
	in, err := PlaceholderValuesInput("oce-system", "openclaw-enterprise-controller:kubernetes-quickstart", 3000)
	if err != nil {
		b.Fatal(err)
	}
	v, err := BuildValues(in)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := CheckChart(ch, "oce-system", v); err != nil {
			b.Fatal(err)
		}
	}
}
