package locate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Podman keeps its connections (its counterpart of docker contexts) in two places:
//
//   - containers.conf, [engine] active_service (the default) and
//     [engine.service_destinations.NAME] uri/identity/is_machine: every Podman release writes
//     and reads these; Podman 5 still reads them but writes the file below;
//   - podman-connections.json next to the user's containers.conf (or $PODMAN_CONNECTIONS_CONF):
//     {"Connection": {"Default": NAME, "Connections": {NAME: {"URI", "Identity", "IsMachine"}}}},
//     written by Podman 5 (`podman system connection add`, `podman machine init`). Its default
//     and its connections win over containers.conf's.
//
// containers.conf is read the way Podman reads it: $CONTAINERS_CONF alone when set; otherwise
// /usr/share/containers/containers.conf, /etc/containers/containers.conf, the .conf files of
// /etc/containers/containers.conf.d, the user's containers.conf ($XDG_CONFIG_HOME or ~/.config)
// and the .conf files of its .d directory, each later file overriding the keys it sets; then
// $CONTAINERS_CONF_OVERRIDE. (Podman 4 reads the user's file only when rootless; no root
// user's home normally has one.)

// destination is one Podman connection.
type destination struct {
	URI       string `toml:"uri" json:"URI"`
	Identity  string `toml:"identity" json:"Identity"`
	IsMachine bool   `toml:"is_machine" json:"IsMachine"`
}

// podmanConfig is what location needs of Podman's configuration.
type podmanConfig struct {
	// remote is [engine] remote: a Linux podman then talks to a connection, not to local storage.
	remote bool
	// defaultName is the default connection's name and defaultFrom the file that says so.
	defaultName, defaultFrom string
	// connections are all connections by name, each with the file that defines it.
	connections map[string]destination
	from        map[string]string
	// files lists every file read, for messages.
	files []string
}

type containersConf struct {
	Engine struct {
		Remote              *bool                  `toml:"remote"`
		ActiveService       string                 `toml:"active_service"`
		ServiceDestinations map[string]destination `toml:"service_destinations"`
	} `toml:"engine"`
}

// readPodmanConfig reads Podman's connection configuration. A missing file is no configuration;
// a file that does not parse is an error naming the file, as it is for podman.
func readPodmanConfig(env Env) (*podmanConfig, error) {
	cfg := &podmanConfig{connections: map[string]destination{}, from: map[string]string{}}
	files, err := containersConfFiles(env)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read Podman configuration %s: %w", f, err)
		}
		var c containersConf
		if _, err := toml.Decode(string(data), &c); err != nil {
			return nil, fmt.Errorf("Podman configuration %s is not valid TOML (%v); fix the file", f, err)
		}
		cfg.files = append(cfg.files, f)
		if c.Engine.Remote != nil {
			cfg.remote = *c.Engine.Remote
		}
		if c.Engine.ActiveService != "" {
			cfg.defaultName, cfg.defaultFrom = c.Engine.ActiveService, f
		}
		for name, d := range c.Engine.ServiceDestinations {
			cfg.connections[name], cfg.from[name] = d, f
		}
	}
	file, err := connectionsFile(env)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cfg, nil
	case err != nil:
		return nil, fmt.Errorf("read Podman connections %s: %w", file, err)
	}
	var conns struct {
		Connection struct {
			Default     string
			Connections map[string]destination
		}
	}
	if err := json.Unmarshal(data, &conns); err != nil {
		return nil, fmt.Errorf("Podman connections %s are not valid JSON (%v); fix the file, or recreate the connections with `podman system connection add`", file, err)
	}
	cfg.files = append(cfg.files, file)
	if conns.Connection.Default != "" {
		cfg.defaultName, cfg.defaultFrom = conns.Connection.Default, file
	}
	for name, d := range conns.Connection.Connections {
		cfg.connections[name], cfg.from[name] = d, file
	}
	return cfg, nil
}

// containersConfFiles lists the containers.conf files Podman reads, in order.
func containersConfFiles(env Env) ([]string, error) {
	var files []string
	if f := env.getenv("CONTAINERS_CONF"); f != "" {
		files = append(files, f)
	} else {
		files = append(files, env.system("/usr/share/containers/containers.conf"), env.system("/etc/containers/containers.conf"))
		files = append(files, confDir(env.system("/etc/containers/containers.conf.d"))...)
		home, err := env.configHome()
		if err != nil {
			return nil, err
		}
		user := filepath.Join(home, "containers", "containers.conf")
		files = append(files, user)
		files = append(files, confDir(user+".d")...)
	}
	if f := env.getenv("CONTAINERS_CONF_OVERRIDE"); f != "" {
		files = append(files, f)
	}
	return files, nil
}

// confDir lists the .conf files of dir in name order; a missing directory has none.
func confDir(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".conf") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// connectionsFile is $PODMAN_CONNECTIONS_CONF, else podman-connections.json beside the user's
// containers.conf.
func connectionsFile(env Env) (string, error) {
	if f := env.getenv("PODMAN_CONNECTIONS_CONF"); f != "" {
		return f, nil
	}
	home, err := env.configHome()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "containers", "podman-connections.json"), nil
}

// describe names where the configuration was read, for messages.
func (c *podmanConfig) describe() string {
	if len(c.files) == 0 {
		return "no Podman configuration file exists"
	}
	return "read " + strings.Join(c.files, ", ")
}
