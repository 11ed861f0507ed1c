package driver

// Facet is a containment facet a Sandbox driver declares. (Placeholder until the installation
// helper lands the full facets.go with ValidateFacets; it owns this file.)
type Facet string

// The facets a driver may declare.
const (
	FacetNetworking Facet = "networking"
	FacetFilesystem Facet = "filesystem"
	FacetProcess    Facet = "process"
)
