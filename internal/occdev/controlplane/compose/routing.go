package compose

import (
	"path/filepath"
	"strconv"

	"github.com/compose-spec/compose-go/v2/types"
)

// The files of the private Agent Gateway route the controller and worker-kubernetes read: the
// route's API key and the certificate of its CA, written into the state directory before the
// services start and mounted read-only under RoutingMountDir.
const (
	GatewayKeyName   = "gateway-api-key"
	GatewayCAName    = "gateway-ca.crt"
	RoutingMountDir  = "/run/openclaw-development"
	EnvGatewayKey    = "OCC_GATEWAY_API_KEY_PATH"
	EnvNodeExtraCAs  = "NODE_EXTRA_CA_CERTS"
	routingFileOwner = "the route's files are mounted there by occ dev up"
)

// routingFile is one route file as the services see it.
type routingFile struct {
	name, env string
}

var routingFiles = []routingFile{{GatewayKeyName, EnvGatewayKey}, {GatewayCAName, EnvNodeExtraCAs}}

// addRouting gives the controller and worker-kubernetes the route's files: each variable names
// its file under RoutingMountDir, and each file of stateDir is bind-mounted there read-only (the
// SELinux label shared, as the checkout's own mounts of the Installation are). Compose files
// that set one of the variables to another value, or mount something at one of the targets,
// are refused: the services would not reach the route, or would read another key.
func (m *Model) addRouting(stateDir string) []Violation {
	var out []Violation
	for _, name := range APIServices {
		svc, ok := m.Project.Services[name]
		if !ok {
			continue // a missing service is refused on its own
		}
		env := cloneMapping(svc.Environment)
		volumes := append([]types.ServiceVolumeConfig(nil), svc.Volumes...)
		for _, f := range routingFiles {
			target := RoutingMountDir + "/" + f.name
			if v := svc.Environment[f.env]; v != nil && *v != target {
				out = append(out, Violation{Service: name, Key: "environment." + f.env, Value: *v,
					Rule: "must be " + target + ": " + routingFileOwner, Fix: "remove " + f.env + " from the Compose files"})
			}
			for i, v := range svc.Volumes {
				if filepath.Clean(v.Target) == target {
					out = append(out, Violation{Service: name, Key: "volumes[" + strconv.Itoa(i) + "]", Value: v.Source + ":" + v.Target,
						Rule: "mounts " + target + ", where " + routingFileOwner, Fix: "remove that mount from the Compose files"})
				}
			}
			value := target
			env[f.env] = &value
			volumes = append(volumes, types.ServiceVolumeConfig{Type: types.VolumeTypeBind, Source: filepath.Join(stateDir, f.name), Target: target,
				ReadOnly: true, Bind: &types.ServiceVolumeBind{SELinux: types.SELinuxShared}})
		}
		svc.Environment, svc.Volumes = env, volumes
		m.Project.Services[name] = svc
	}
	return out
}
