package driver

import (
	"strings"
	"testing"
)

func TestValidateFacets(t *testing.T) {
	const rule = "Declare at least one distinct facet. Unknown, duplicate, or empty declarations are rejected."
	cases := []struct {
		name   string
		facets []Facet
		// want lists substrings every one of which must appear; nil means the facets are valid.
		want []string
	}{
		// The OpenShell driver declares all three facets native OpenClaw requires.
		{name: "all three", facets: []Facet{FacetNetworking, FacetFilesystem, FacetProcess}},
		// A driver that only fences the network is a valid subset.
		{name: "subset", facets: []Facet{FacetNetworking}},
		// A driver that forgot to declare anything must not start.
		{name: "nil", facets: nil, want: []string{"declares no facets", rule}},
		{name: "empty list", facets: []Facet{}, want: []string{"declares no facets"}},
		// An empty string in the list is an empty declaration.
		{name: "empty entry", facets: []Facet{FacetProcess, ""}, want: []string{"facets[1]", "empty facet declaration", rule}},
		{name: "blank entry", facets: []Facet{" "}, want: []string{"facets[0]", "empty facet declaration"}},
		// exec is the facet people expect, but the contract has none.
		{name: "exec is unknown", facets: []Facet{"exec"}, want: []string{`facets[0] "exec"`, "unknown facet", "there is no exec facet"}},
		// Facet names are exact: a capitalised spelling is not the same facet.
		{name: "case matters", facets: []Facet{"Networking"}, want: []string{`"Networking"`, "unknown facet"}},
		{name: "duplicate", facets: []Facet{FacetFilesystem, FacetProcess, FacetFilesystem}, want: []string{`facets[2] "filesystem"`, "duplicate of facets[0]"}},
		// Every problem is reported, not just the first.
		{name: "all problems", facets: []Facet{"exec", "", FacetProcess, FacetProcess}, want: []string{"facets[0]", "facets[1]", "facets[3]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateFacets(tc.facets)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ValidateFacets(%q) = %v, want nil", tc.facets, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateFacets(%q) = nil, want an error containing %q", tc.facets, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ValidateFacets(%q) = %q, missing %q", tc.facets, err, w)
				}
			}
		})
	}
}
