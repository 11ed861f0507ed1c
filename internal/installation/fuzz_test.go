package installation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder. Decode, Validate and Marshal never panic;
// decode problems are always Problems; and a document that decodes and validates cleanly
// round-trips through Marshal to an equal, still valid model.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(fixtureDir, "invalid", "*.yaml"))
	seeds = append(seeds, filepath.Join(fixtureDir, "dev.yaml"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Decode(data)
		if err != nil {
			var problems Problems
			if !errors.As(err, &problems) || len(problems) == 0 {
				t.Fatalf("Decode error %T %v is not a non-empty Problems", err, err)
			}
		}
		if in == nil {
			if err == nil {
				t.Fatal("Decode returned neither a model nor problems")
			}
			return
		}
		problems := in.Validate()
		if err != nil || len(problems) > 0 {
			// An invalid model must still be writable without panicking.
			_, _ = in.Marshal()
			return
		}
		out, err := in.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a valid Installation: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Marshal output of a valid Installation does not load: %v\ninput:\n%s\noutput:\n%s", err, data, out)
		}
		assertSameInstallation(t, in, again)
	})
}

// largeInstallation is dev.yaml with n network policies of two endpoints each.
func largeInstallation(tb testing.TB, n int) []byte {
	tb.Helper()
	src := readFixture(tb, "dev.yaml")
	start := strings.Index(src, "        networkPolicies:\n")
	end := strings.Index(src, "  credential_gateway:\n")
	if start < 0 || end < start {
		tb.Fatal("dev.yaml lost its networkPolicies block")
	}
	var b strings.Builder
	b.WriteString("        networkPolicies:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `          - name: policy-%03d
            binaries:
              - path: /usr/bin/tool-%03d
              - path: /usr/local/bin/helper
            endpoints:
              - host: api-%03d.example.com
                ports: [443, 8443]
                protocol: rest
                tls: terminate
                access: read_only
                enforcement: enforce
              - host: git-%03d.example.com
                ports: [22]
                protocol: tcp
                tls: skip
`, i, i, i, i)
	}
	return []byte(src[:start] + b.String() + src[end:])
}

// BenchmarkValidate decodes and validates an Installation with 100 network policies, the
// work `occ sandbox validate` and driver startup do.
func BenchmarkValidate(b *testing.B) {
	data := largeInstallation(b, 100)
	if _, err := Parse(data); err != nil {
		b.Fatalf("benchmark Installation is invalid: %v", err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateOnly measures the rules alone on an already decoded model.
func BenchmarkValidateOnly(b *testing.B) {
	in, err := Decode(largeInstallation(b, 100))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ps := in.Validate(); len(ps) != 0 {
			b.Fatal(ps)
		}
	}
}
