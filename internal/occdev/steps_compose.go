package occdev

// composeProfile is the Compose control plane (reference §3.3): OCE's postgres, migrate,
// bootstrap, controller and worker-kubernetes in a Compose project beside the cluster, which
// joins the project's development network and publishes the Gateway as NodePort 30051.
//
// Not wired yet (issue 9): no Compose project is started, so `up` installs the sandbox platform
// and writes an Installation whose Gateway endpoint is the node's NodePort, and nothing uses it.
// Its steps go here: the project's network and data services in beforeCluster, the network to
// join in k3d, and the API, the readiness wait and the bootstrap key in controlPlane.
func composeProfile(*Plan) profile {
	return profile{
		pending: "not started: the OCE control plane in Compose is not wired into occ dev up yet, so only the sandbox platform is up (the Gateway on the node's NodePort 30051, and the Installation that names it)",
	}
}
