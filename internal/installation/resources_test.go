package installation

import (
	"strings"
	"testing"
)

// A provider-networking custom resource keeps the YAML types of its fields through Marshal:
// whole floats stay floats, and strings that look like numbers, booleans or dates stay strings.
func TestResourceFieldTypesRoundTrip(t *testing.T) {
	src := readFixture(t, "dev.yaml")
	obj := `          - apiVersion: cilium.io/v2
            kind: CiliumNetworkPolicy
            metadata:
              name: w
            spec:
              f: 1.0
              g: 1e3
              d: 2001-12-14
              s: "8080"
              b: "true"
              n: null
              bin: !!binary aGVsbG8=
`
	src = strings.Replace(src, "        networkPolicyResources:\n", "        networkPolicyResources:\n"+obj, 1)
	in, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"f: 1.0", "g: 1000.0", `d: "2001-12-14"`, `s: "8080"`, `b: "true"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Marshal output lacks %q", want)
		}
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	assertSameInstallation(t, in, again)
}
