package driver

import (
	"errors"
	"fmt"
	"strings"
)

// Facet is a kind of containment a Sandbox driver enforces for the Harness it confines.
type Facet string

// The facets a driver may declare. There is no exec facet: command-level
// authorization and per-tool sandboxes are deferred, and exec runs inside the Harness sandbox.
const (
	// FacetNetworking: connections only to approved destinations and peers.
	FacetNetworking Facet = "networking"
	// FacetFilesystem: approved image paths and Agent-owned workspace paths with their modes.
	FacetFilesystem Facet = "filesystem"
	// FacetProcess: approved process identity, capabilities and operating-system limits.
	FacetProcess Facet = "process"
)

// KnownFacets are the supported facets in their documented order.
var KnownFacets = []Facet{FacetNetworking, FacetFilesystem, FacetProcess}

// facetRule is the SandboxDriver contract for the facets member, repeated in every refusal so
// the operator sees the whole rule, followed by its troubleshooting advice.
const facetRule = "Declare at least one distinct facet. Unknown, duplicate, or empty declarations are rejected. " +
	"Supported facets are networking, filesystem, and process; there is no exec facet."

// ValidateFacets is the startup check for a registered Sandbox driver: the declared facets must
// be non-empty, unique and known. Every problem is reported, each naming the offending entry.
// Startup must stop on an error rather than run a driver whose containment is unclear.
func ValidateFacets(facets []Facet) error {
	if len(facets) == 0 {
		return fmt.Errorf("sandbox driver facets: the driver declares no facets: %s", facetRule)
	}
	var errs []error
	seen := make(map[Facet]int, len(facets))
	for i, f := range facets {
		switch {
		case strings.TrimSpace(string(f)) == "":
			errs = append(errs, fmt.Errorf("sandbox driver facets[%d]: empty facet declaration: %s", i, facetRule))
		case !isKnownFacet(f):
			errs = append(errs, fmt.Errorf("sandbox driver facets[%d] %q: unknown facet: %s", i, string(f), facetRule))
		default:
			if first, dup := seen[f]; dup {
				errs = append(errs, fmt.Errorf("sandbox driver facets[%d] %q: duplicate of facets[%d]: %s", i, string(f), first, facetRule))
				continue
			}
			seen[f] = i
		}
	}
	return errors.Join(errs...)
}

func isKnownFacet(f Facet) bool {
	for _, k := range KnownFacets {
		if f == k {
			return true
		}
	}
	return false
}
