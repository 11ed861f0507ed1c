package locate

// PodmanStart is what to run so that Podman listens at socket again, worded as Find words it for
// the place the socket is: the rootful or rootless socket (`systemctl start podman.socket`,
// `systemctl --user start podman.socket`) or a Podman machine's forwarded socket (`podman machine
// start`). CONTAINER_HOST and CONTAINER_CONNECTION are not read: an engine recorded at socket is
// started there whatever they say now. A socket at none of those places gets Podman's API
// service command for it.
func PodmanStart(env Env, socket string) string {
	fixed := env
	fixed.Getenv = func(name string) string {
		if name == EnvContainerHost || name == EnvContainerConnection {
			return ""
		}
		return env.getenv(name)
	}
	places, err := podmanPlaces(fixed)
	if err != nil {
		places = nil
	}
	places = append(places, machinePlace(fixed, defaultMachine, ""))
	for _, p := range places {
		for _, s := range p.sockets {
			if s == socket && p.start != "" {
				return p.start
			}
		}
	}
	return "start Podman's API service on it (`podman system service --time=0 unix://" + socket + "`)"
}
