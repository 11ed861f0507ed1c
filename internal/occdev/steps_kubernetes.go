package occdev

// kubernetesProfile is the Kubernetes-only control plane (reference §3.2): OCE's PostgreSQL,
// API and worker installed into the cluster, reached through an API proxy NodePort published on
// 127.0.0.1.
//
// Not wired yet (issue 10): the control plane's steps (controlplane/kubernetes' Steps, in
// reference §5.5 order) go in controlPlane, and the API proxy's port mapping in k3d.
func kubernetesProfile(*Plan) profile {
	return profile{
		pending: "not started: the OCE control plane in the cluster is not wired into occ dev up yet, so only the sandbox platform is up (the Gateway as a ClusterIP Service, and the Installation that names it)",
	}
}
