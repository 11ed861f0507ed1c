package compose

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// Labels Compose puts on what it creates (and podman-compose's project label, which ensureAbsent
// also honours so a Podman-made leftover is not missed).
const (
	LabelProject       = "com.docker.compose.project"
	LabelService       = "com.docker.compose.service"
	LabelOneoff        = "com.docker.compose.oneoff"
	LabelPodmanProject = "io.podman.compose.project"
)

// The container states (engine.Object's State) this package tells apart.
const (
	stateRunning = "running"
	stateExited  = "exited"
	stateDead    = "dead"
)

// Stack is a running (or stopped) Compose project seen through the engine's verbs.
type Stack struct {
	// Project is the Compose project name.
	Project string
	Engine  engine.Engine
	// Redact are literal secrets scrubbed from log lines shown in errors.
	Redact []string
}

// serviceContainers lists the project's containers of one service, stopped ones included, and
// one-off `compose run` containers excluded.
func (s Stack) serviceContainers(ctx context.Context, service string) ([]engine.Object, error) {
	list, err := s.Engine.List(ctx, engine.Containers, map[string]string{LabelProject: s.Project, LabelService: service})
	if err != nil {
		return nil, fmt.Errorf("list containers of service %s: %w", service, err)
	}
	out := list[:0]
	for _, c := range list {
		if c.Labels[LabelOneoff] == "True" {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// ServiceImages maps each service whose one container is running to the image ID it runs. A
// service with no container, a stopped one or several (a recreation cut short, by a kill of
// occ and the plugin, leaves the old container renamed beside a new one that never started)
// is absent from the result: it runs no image, whatever its containers were made from.
func (s Stack) ServiceImages(ctx context.Context, services ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, svc := range services {
		list, err := s.serviceContainers(ctx, svc)
		if err != nil {
			return nil, err
		}
		if len(list) == 1 && list[0].State == stateRunning {
			out[svc] = list[0].Image
		}
	}
	return out, nil
}

// oneContainer returns the single container of service, or an error naming how many exist. A
// service with no container yet returns "" and no error.
func (s Stack) oneContainer(ctx context.Context, service string) (string, error) {
	list, err := s.serviceContainers(ctx, service)
	if err != nil {
		return "", err
	}
	switch len(list) {
	case 0:
		return "", nil
	case 1:
		return list[0].ID, nil
	}
	return "", fmt.Errorf("multiple containers found for %s (%d); the project is scaled or was changed outside occ", service, len(list))
}

// ServiceAddress is the IPv4 address of service's one container on network.
func (s Stack) ServiceAddress(ctx context.Context, service, network string) (netip.Addr, error) {
	id, err := s.oneContainer(ctx, service)
	if err != nil {
		return netip.Addr{}, err
	}
	if id == "" {
		return netip.Addr{}, fmt.Errorf("service %s has no container", service)
	}
	info, err := s.Engine.Inspect(ctx, engine.Containers, id)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("inspect the container of service %s: %w", service, err)
	}
	if ip, on := info.Addresses[network]; on {
		if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("the container of service %s has no IPv4 address on network %s", service, network)
}
