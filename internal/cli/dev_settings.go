package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/state"
)

// devSetting resolves a `occ dev` setting: an explicit flag wins, then the reference's
// OCC_DEVELOPMENT_* variable, then the value viper resolved (config file, OCC_* variable, flag
// default).
func devSetting(g *Globals, cmd *cobra.Command, flag, env string) string {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return f.Value.String()
	}
	if env != "" {
		if v, ok := os.LookupEnv(env); ok && v != "" {
			return v
		}
	}
	return g.v.GetString(flag)
}

// The pin file setting replaces the built-in pins for every command that reads pins (dev up and
// dev pins): one flag, one variable, one definition.
const (
	pinFileFlag = "pin-file"
	pinFileEnv  = "OCC_DEVELOPMENT_PIN_FILE"
)

func addPinFileFlag(cmd *cobra.Command) {
	cmd.Flags().String(pinFileFlag, "", "pin file replacing the pins built into occ (env "+pinFileEnv+")")
}

// pinFileSetting returns the pin file in effect ("" for the built-in pins) and the setting it
// came from.
func pinFileSetting(g *Globals, cmd *cobra.Command) (path, from string) {
	path = devSetting(g, cmd, pinFileFlag, pinFileEnv)
	switch {
	case path == "":
		return "", ""
	case cmd.Flags().Changed(pinFileFlag):
		return path, "--" + pinFileFlag
	case os.Getenv(pinFileEnv) != "":
		return path, pinFileEnv
	}
	return path, "the config file or OCC_PIN_FILE"
}

// pinFile is the pin file in effect, "" for the built-in pins.
func pinFile(g *Globals, cmd *cobra.Command) string {
	path, _ := pinFileSetting(g, cmd)
	return path
}

// occCommand is how the user ran occ, for printed commands: a bare name stays bare (it is on
// PATH), a path becomes absolute so the command works from any directory.
func occCommand() string {
	if len(os.Args) == 0 || !strings.Contains(os.Args[0], string(filepath.Separator)) {
		return "occ"
	}
	if abs, err := filepath.Abs(os.Args[0]); err == nil {
		return abs
	}
	return os.Args[0]
}

// devError turns a bad option, a refused state directory, a refused Docker endpoint
// (DOCKER_HOST or a docker context that is not a local unix socket) or a refused Compose model
// into a usage error (exit 2): all are fixed in the settings or the Compose files, and nothing
// was created. Other errors pass through.
func devError(err error) error {
	var opt *occdev.OptionError
	var unsafe *state.UnsafeError
	var endpoint *docker.EndpointError
	var model *compose.ProjectError
	if errors.As(err, &opt) || errors.As(err, &unsafe) || errors.As(err, &endpoint) || errors.As(err, &model) {
		return &usageError{err: err}
	}
	return err
}
