package compose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PluginName is the executable name of the Compose CLI plugin.
const PluginName = "docker-compose"

// MinPluginVersion is the oldest plugin occ runs: the snapshot is written by compose-go v2,
// which always writes depends_on.<service>.required, and Compose only accepts that key from
// v2.20.0 on.
var MinPluginVersion = version{2, 20, 0}

// SystemPluginDirs are the Docker CLI's system-wide plugin directories on Linux, in its order.
var SystemPluginDirs = []string{
	"/usr/local/lib/docker/cli-plugins",
	"/usr/local/libexec/docker/cli-plugins",
	"/usr/lib/docker/cli-plugins",
	"/usr/libexec/docker/cli-plugins",
}

// Plugin is a located, version-checked Compose plugin.
type Plugin struct {
	// Path is the executable.
	Path string
	// Version is what its metadata reports ("v2.29.7", "v5.6.0").
	Version string
}

// FindPluginOptions say where to look. The zero value looks where the Docker CLI does.
type FindPluginOptions struct {
	// DockerConfig is $DOCKER_CONFIG; empty means $HOME/.docker.
	DockerConfig string
	// Home is the home directory; empty means os.UserHomeDir.
	Home string
	// SystemDirs replaces SystemPluginDirs (tests).
	SystemDirs []string
}

// PluginNotFoundError says where the plugin was looked for and how to install it.
type PluginNotFoundError struct {
	Searched []string
}

func (e *PluginNotFoundError) Error() string {
	return fmt.Sprintf("the docker compose CLI plugin was not found (looked for %s in %s); occ runs the Compose control plane through it. Install Docker Compose v%s or newer: Docker Desktop and docker-ce ship it (Debian/Ubuntu with Docker's apt repository: apt-get install docker-compose-plugin), or put the docker-compose binary of a release at ~/.docker/cli-plugins/docker-compose and chmod +x it",
		PluginName, strings.Join(e.Searched, ", "), MinPluginVersion)
}

// FindPlugin locates docker-compose in the Docker CLI plugin directories, in the CLI's order
// (config.json's cliPluginsExtraDirs, $DOCKER_CONFIG/cli-plugins or ~/.docker/cli-plugins, then
// the system directories), and checks its version from its plugin metadata.
func FindPlugin(ctx context.Context, opts FindPluginOptions) (Plugin, error) {
	dirs, err := pluginDirs(opts)
	if err != nil {
		return Plugin{}, err
	}
	for _, d := range dirs {
		p := filepath.Join(d, PluginName)
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return Plugin{}, fmt.Errorf("docker compose plugin %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return Plugin{}, fmt.Errorf("docker compose plugin %s is not an executable file; chmod +x it or remove it", p)
		}
		return checkPlugin(ctx, p)
	}
	return Plugin{}, &PluginNotFoundError{Searched: dirs}
}

func pluginDirs(opts FindPluginOptions) ([]string, error) {
	cfg := opts.DockerConfig
	if cfg == "" {
		home := opts.Home
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("find docker compose plugin: no home directory and no DOCKER_CONFIG: %w", err)
			}
			home = h
		}
		cfg = filepath.Join(home, ".docker")
	}
	var dirs []string
	// The CLI's config file may name extra plugin directories; they come first, as in the CLI.
	if b, err := os.ReadFile(filepath.Join(cfg, "config.json")); err == nil {
		var c struct {
			Extra []string `json:"cliPluginsExtraDirs"`
		}
		if json.Unmarshal(b, &c) == nil {
			for _, d := range c.Extra {
				if filepath.IsAbs(d) {
					dirs = append(dirs, d)
				}
			}
		}
	}
	dirs = append(dirs, filepath.Join(cfg, "cli-plugins"))
	system := opts.SystemDirs
	if system == nil {
		system = SystemPluginDirs
	}
	return append(dirs, system...), nil
}

// checkPlugin asks the plugin for its metadata (the handshake the Docker CLI uses) and checks
// the version.
func checkPlugin(ctx context.Context, path string) (Plugin, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "docker-cli-plugin-metadata")
	cmd.Env = pluginEnv(nil, "")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// Killed because the command was cancelled (Ctrl-C) or the plugin hung past the bound:
		// the cause is the context's, which the step reports as an interruption or a timeout,
		// not the "signal: killed" of a plugin that failed by itself.
		if ctx.Err() != nil {
			return Plugin{}, fmt.Errorf("docker compose plugin %s did not answer its metadata request: %w", path, ctx.Err())
		}
		return Plugin{}, fmt.Errorf("docker compose plugin %s does not answer its metadata request: %w%s", path, err, tail("stderr", stderr.Bytes(), nil))
	}
	var md struct {
		SchemaVersion string
		Vendor        string
		Version       string
	}
	if err := json.Unmarshal(stdout.Bytes(), &md); err != nil || md.Version == "" {
		return Plugin{}, fmt.Errorf("docker compose plugin %s answered no version in its metadata; reinstall Docker Compose", path)
	}
	v, ok := parseVersion(md.Version)
	if !ok {
		return Plugin{}, fmt.Errorf("docker compose plugin %s reports version %q, which occ cannot compare with the required v%s; install a released Docker Compose", path, md.Version, MinPluginVersion)
	}
	if v.less(MinPluginVersion) {
		return Plugin{}, fmt.Errorf("docker compose plugin %s is version %s; occ needs v%s or newer (its snapshot uses depends_on.required); upgrade Docker Compose", path, md.Version, MinPluginVersion)
	}
	return Plugin{Path: path, Version: md.Version}, nil
}

type version [3]int

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

func (v version) less(o version) bool {
	for i := range v {
		if v[i] != o[i] {
			return v[i] < o[i]
		}
	}
	return false
}

// parseVersion reads "v2.29.7", "2.29.7-desktop.1" or "v5.6.0+x".
func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return version{}, false
	}
	var v version
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return version{}, false
		}
		v[i] = n
	}
	return v, true
}
