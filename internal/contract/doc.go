// Package contract holds the definitions the parts of occ must agree on exactly: the metadata
// keys OCC, Kubernetes Compute, the OpenShell driver and the development charts stamp and select
// by, the shape of the provider names the Credential Gateway issues, the path and network-rule
// shapes the Installation validator and the driver both enforce, how an endpoint's credentials
// are kept out of messages, and the pinned OpenShell version messages cite.
//
// Each rule is defined here once. Validation (`occ sandbox validate`) and the driver (`render`,
// `provision`) call the same function, so a value one accepts the other cannot refuse.
package contract
