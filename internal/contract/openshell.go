package contract

// PinnedOpenShellVersion is the OpenShell release occ pins (internal/occdev/pins/pins.yaml,
// openshell.version), named by messages whose rule comes from that release. A test keeps the
// two equal.
const PinnedOpenShellVersion = "0.1.3-pre.2"

// ReservedNetworkPolicyName is the network rule the driver adds itself for workspace-node
// enrollment; a configured rule may not take the name.
const ReservedNetworkPolicyName = "workspace-node-enrollment"
