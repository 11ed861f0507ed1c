package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/state"
)

// devSetting is one setting of the `occ dev` commands, described once: its flag, the
// environment variable that gives it when the flag is not, and the flag's help text. Each command
// registers its flags from these values and binds each to the option field it fills (devFlags);
// the rules of the values are the library's, which reports a bad one as an *option.Error.
type devSetting struct {
	// flag and short are the flag's name and shorthand; flag is empty for a setting that only
	// the environment gives.
	flag, short string
	// env is the setting's own variable, taken from the constant of the package that reads the
	// setting; empty when the setting has none, and then OCC_<FLAG> gives it (envOf).
	env string
	// usage is the flag's help text.
	usage string
	// want is set for a whole number whose 0 stands for occ's default: it says what to give,
	// for a value that is no number and for an explicit 0, which would otherwise be read as
	// "the default" without a word.
	want string
}

// The settings of the `occ dev` commands. A setting several commands share (the state
// directory, the startup timeout, the pin file) is described here once; a command whose help
// says it differently gives its own usage text (withUsage).
var (
	settingStateDir    = devSetting{flag: "state-dir", env: state.EnvDirectory, usage: "private state directory; wins over --name's (default $XDG_STATE_HOME/occ/dev, or …/occ/dev-envs/NAME with --name; env " + state.EnvDirectory + ")"}
	settingEnvironment = devSetting{flag: "name", env: state.EnvEnvironment,
		usage: "the environment, so several live side by side: its own state directory, Compose project and host ports (default " + state.DefaultEnvironment + "; env " + state.EnvEnvironment + ")"}
	settingClusterProvider = devSetting{flag: "cluster-provider", env: occdev.EnvClusterProvider,
		usage: "where the cluster comes from: " + strings.Join(occdev.SupportedProviders(), ", ") + " (default k3d: a cluster occ creates; existing: the kubeconfig context; env " + occdev.EnvClusterProvider + ")"}
	settingEngine = devSetting{flag: "engine", env: locate.ChoiceEnv,
		usage: "container engine: " + locate.ChoiceList() + "; auto takes Docker when it answers, else Podman (default auto; env " + locate.ChoiceEnv + ")"}
	settingControlPlane = devSetting{flag: "control-plane", env: occdev.EnvControlPlane,
		usage: "where OCE is meant to run: compose (Gateway NodePort 30051) or kubernetes (ClusterIP) (default compose; env " + occdev.EnvControlPlane + ")"}
	settingNamespace = devSetting{flag: "namespace", short: "n", env: occdev.EnvNamespace,
		usage: "platform namespace for the Gateway (default openshell-system, or oce-system with --control-plane kubernetes; env " + occdev.EnvNamespace + ")"}
	settingPinFile = devSetting{flag: "pin-file", env: occdev.EnvPinFile, usage: "pin file replacing the pins built into occ (env " + occdev.EnvPinFile + ")"}
	settingArchive = devSetting{flag: "openshell-archive", env: occdev.EnvArchive,
		usage: "local copy of the pinned OpenShell source archive, still verified against the pin (env " + occdev.EnvArchive + ")"}
	settingGatewayChart = devSetting{flag: "openshell-helm-chart", env: occdev.EnvGatewayChart,
		usage: "local OpenShell Gateway chart (directory or packaged .tgz) instead of the pinned archive's; with --openshell-workspace-helm-chart (env " + occdev.EnvGatewayChart + ")"}
	settingWorkspaceChart = devSetting{flag: "openshell-workspace-helm-chart", env: occdev.EnvWorkspaceChart,
		usage: "local OpenShell Workspace chart (directory or packaged .tgz); with --openshell-helm-chart (env " + occdev.EnvWorkspaceChart + ")"}
	settingAgentSandboxManifest = devSetting{flag: "agent-sandbox-manifest", env: occdev.EnvAgentSandboxManifest,
		usage: "local Agent Sandbox manifest instead of the pinned download, for offline use (env " + occdev.EnvAgentSandboxManifest + ")"}
	settingPinBundle = devSetting{flag: "bundle", env: occdev.EnvBundle,
		usage: "take every pinned image and download from this file of occ dev bundle create (env " + occdev.EnvBundle + ")"}
	settingOffline = devSetting{flag: "offline", env: occdev.EnvOffline,
		usage: "refuse any pull or download: every artifact comes from --bundle, the cache or the engine (env " + occdev.EnvOffline + ")"}
	settingCertManagerManifest = devSetting{flag: "cert-manager-manifest", env: occdev.EnvCertManagerManifest,
		usage: "local copy of the pinned cert-manager manifest, still verified against the pin, for offline use (env " + occdev.EnvCertManagerManifest + ")"}
	settingEnvoyGatewayManifest = devSetting{flag: "envoy-gateway-manifest", env: occdev.EnvEnvoyGatewayManifest,
		usage: "local copy of the pinned Envoy Gateway manifest, still verified against the pin, for offline use (env " + occdev.EnvEnvoyGatewayManifest + ")"}
	settingGatewayEndpoint = devSetting{flag: "gateway-endpoint", env: occdev.EnvGatewayEndpoint,
		usage: "host:port where the final Health check reaches the Gateway (default: a port-forward; env " + occdev.EnvGatewayEndpoint + ")"}
	settingStartupTimeout = devSetting{flag: "startup-timeout", env: occdev.EnvStartupTimeoutSeconds,
		usage: "bound of each readiness wait, e.g. 10m (default 10m; env " + occdev.EnvStartupTimeoutSeconds + " in seconds)"}
	settingRepository = devSetting{flag: "repository", env: controlplane.EnvRepository,
		usage: "the OCE checkout to run the control plane from (default: found from the working directory upwards; env " + controlplane.EnvRepository + ")"}
	settingKeyOutput  = devSetting{flag: strings.TrimPrefix(controlplane.FlagKeyOutput, "--"), usage: "absent absolute path in a private directory for the bootstrap service key (default <state-dir>/initial-admin-service-key.json)"}
	settingDryRun     = devSetting{flag: "dry-run", usage: "print the steps and what each would create; touch nothing"}
	settingNoDiagnose = devSetting{flag: "no-diagnose", usage: "write no debug bundle when up fails (by default one is written beside the state directory before the rollback)"}
	settingBundle     = devSetting{flag: "archive", usage: "the debug bundle to write, a new .tar.gz file (default ./occ-diagnose-<UTC time>.tar.gz)"}

	// The settings only the environment gives.
	settingComposeProject       = devSetting{env: compose.EnvProject}
	settingControllerImage      = devSetting{env: controlplane.EnvControllerImage}
	settingRuntimeImage         = devSetting{env: controlplane.EnvRuntimeImage}
	settingNodeBaseImage        = devSetting{env: controlplane.EnvNodeBaseImage}
	settingNodeRuntimeBaseImage = devSetting{env: controlplane.EnvNodeRuntimeBaseImage}
	settingK3sImage             = devSetting{env: k3d.EnvK3sImage}

	// The settings of `occ dev logs`, read as kubectl's and compose's.
	settingFollow     = devSetting{flag: "follow", short: "f", usage: "keep printing new lines until Ctrl-C, and the lines of containers that start meanwhile"}
	settingTail       = devSetting{flag: "tail", usage: "how many of each container's last lines to print first; -1 prints all"}
	settingSince      = devSetting{flag: "since", usage: "only lines newer than a duration (10m, 1h30m) or an RFC 3339 time (2026-01-02T15:04:05Z)"}
	settingTimestamps = devSetting{flag: "timestamps", usage: "print each line's RFC 3339 time in front of it"}
)

// environment binds the two settings that select an environment, the state directory (with the
// command's help text) and the environment's name.
func (d *devFlags) environment(stateDirUsage string, dir, name *string) {
	d.text(settingStateDir.withUsage(stateDirUsage), dir)
	d.text(settingEnvironment, name)
}

// withUsage is s with the help text of one command.
func (s devSetting) withUsage(usage string) devSetting {
	s.usage = usage
	return s
}

// envOf is the variable that gives s when its flag is not given: its own, else OCC_<FLAG>.
func (s devSetting) envOf() string {
	if s.env != "" {
		return s.env
	}
	return envName(s.flag)
}

// devFlags are the settings of one dev command, each bound to the option field it fills.
// Registering a setting adds its flag; resolve fills every field, in the one precedence of occ's
// settings (the flag, the setting's variable, OCC_<FLAG>, the config file, the default).
type devFlags struct {
	cmd   *cobra.Command
	binds []binding
}

// binding is one registered setting: field is the option field it fills, resolved is where
// its text and source land, and set parses that text into the field.
type binding struct {
	setting  devSetting
	field    any
	resolved *setting
	set      func(setting) error
}

func newDevFlags(cmd *cobra.Command) *devFlags { return &devFlags{cmd: cmd} }

// add registers the parser of s, whose flag register adds (a setting only the environment
// gives has none). The text of the setting is parsed here whatever its source, so a value from
// the environment follows the same rule as the flag's.
func (d *devFlags) add(s devSetting, field any, register func(*pflag.FlagSet), set func(setting) error) *setting {
	if s.flag != "" {
		register(d.cmd.Flags())
	}
	b := binding{setting: s, field: field, resolved: &setting{}, set: set}
	d.binds = append(d.binds, b)
	return b.resolved
}

// text binds a setting whose value is its text.
func (d *devFlags) text(s devSetting, field *string) *setting {
	return d.add(s, field, func(f *pflag.FlagSet) { f.StringP(s.flag, s.short, "", s.usage) }, func(v setting) error {
		*field = v.raw
		return nil
	})
}

// declared binds a setting a part of occ dev declares of its own (a control-plane profile's or a
// cluster provider's), as a row of this table bound to the field of the part's options value it
// names. A field of another type is a bug in the part's package, caught by the tests of the
// registered parts.
func (d *devFlags) declared(p option.Setting) {
	s := devSetting{flag: p.Flag, short: p.Short, env: p.Env, usage: p.Usage, want: p.Want}
	switch field := p.Field.(type) {
	case *string:
		d.text(s, field)
	case *int:
		d.number(s, 0, field)
	case *bool:
		d.flag(s, field)
	default:
		panic(fmt.Sprintf("the declared setting %s%s fills a %T; a declared setting fills a *string, *int or *bool (a bug in occ)", p.Flag, p.Env, p.Field))
	}
}

// flag binds a switch (--dry-run, --follow): on the command line it takes no value, its
// variable takes true or false.
func (d *devFlags) flag(s devSetting, field *bool) *setting {
	return d.add(s, field, func(f *pflag.FlagSet) { f.BoolP(s.flag, s.short, false, s.usage) }, func(v setting) error {
		on, err := strconv.ParseBool(v.raw)
		if err != nil {
			return &option.Error{Option: v.from, Value: v.raw, Rule: "is not a boolean", Fix: "give true or false"}
		}
		*field = on
		return nil
	})
}

// number binds a whole-number setting with default def. For a setting with want, 0 is occ's
// default and is what an unset setting passes on; the range is the library's rule.
func (d *devFlags) number(s devSetting, def int, field *int) *setting {
	return d.add(s, field, func(f *pflag.FlagSet) { f.VarP(&numberText{strconv.Itoa(def)}, s.flag, s.short, s.usage) }, func(v setting) error {
		if v.isDefault() {
			*field = def
			return nil
		}
		n, err := strconv.Atoi(v.raw)
		switch {
		case err != nil && s.want != "":
			return &option.Error{Option: v.from, Value: v.raw, Rule: "is not a number", Fix: "give " + s.want}
		case err != nil:
			return &option.Error{Option: v.from, Value: v.raw, Rule: "is not a whole number", Fix: "give one such as 20"}
		case n == 0 && s.want != "":
			return &option.Error{Option: v.from, Value: v.raw, Rule: "is out of range", Fix: "give " + s.want}
		}
		*field = n
		return nil
	})
}

// numberText is a whole-number flag's value as typed: the setting's own parser reads it, whatever
// its source, and names the flag in its refusal (pflag's int parser would say
// "strconv.ParseInt: parsing …" and name no fix).
type numberText struct{ text string }

func (n *numberText) Set(v string) error { n.text = v; return nil }
func (n *numberText) String() string     { return n.text }
func (n *numberText) Type() string       { return "int" }

// timeout binds the startup timeout: a duration on the flag, whole seconds in its variable
// (the reference's form). 0 is occ's default, so an explicit 0 is refused; the range is the
// library's rule.
func (d *devFlags) timeout(s devSetting, field *time.Duration) *setting {
	return d.add(s, field, func(f *pflag.FlagSet) { f.StringP(s.flag, s.short, "", s.usage) }, func(v setting) error {
		if v.isDefault() {
			*field = 0
			return nil
		}
		if v.from == s.env {
			n, err := strconv.Atoi(v.raw)
			switch {
			case err != nil:
				return &option.Error{Option: v.from, Value: v.raw, Rule: "is not a whole number of seconds", Fix: "give one from 1 to 86400 (omit it for 600)"}
			case n == 0:
				return &option.Error{Option: v.from, Value: v.raw, Rule: "is out of range", Fix: "give whole seconds from 1 to 86400 (omit it for 600)"}
			}
			*field = time.Duration(n) * time.Second
			return nil
		}
		t, err := time.ParseDuration(v.raw)
		switch {
		case err != nil:
			return &option.Error{Option: v.from, Value: v.raw, Rule: "is not a duration", Fix: "write it like 90s or 10m"}
		case t == 0:
			return &option.Error{Option: v.from, Value: v.raw, Rule: "is out of range", Fix: "give a duration from 1s to 24h (omit it for 10m)"}
		}
		*field = t
		return nil
	})
}

// resolve fills every bound field. It goes through all of them, so a caller that only needs
// one (shell completion needs the state directory) has it even when another is bad, and
// returns the first error.
func (d *devFlags) resolve(g *Globals) error {
	var first error
	for _, b := range d.binds {
		*b.resolved = g.lookup(d.cmd, b.setting.flag, b.setting.env)
		if err := b.set(*b.resolved); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// attribute names, in a refused setting (*option.Error) that the library reports by the
// setting's variable or flag, where the value really came from: the flag, the variable, or the
// config file's key, which only the CLI knows; the fix then names that source too ("drop
// --cluster-name" rather than "unset OCC_DEVELOPMENT_KUBERNETES_CLUSTER", which nobody set).
func (d *devFlags) attribute(err error) error {
	var oe *option.Error
	if !errors.As(err, &oe) {
		return err
	}
	for _, b := range d.binds {
		s, r := b.setting, *b.resolved
		env := s.envOf()
		named := oe.Option == env || strings.Contains(oe.Option, "("+env+")") ||
			(s.flag != "" && (oe.Option == "--"+s.flag || strings.HasPrefix(oe.Option, "--"+s.flag+" ") || strings.Contains(oe.Option, "/--"+s.flag)))
		if !named || r.isDefault() || r.raw != oe.Value {
			continue
		}
		from := r.name()
		oe.Option = from
		switch {
		case strings.HasPrefix(from, "--"):
			oe.Fix = strings.NewReplacer("unset "+env, "drop "+from, "unset it", "drop it").Replace(oe.Fix)
		case strings.HasSuffix(from, " in the config file"):
			oe.Fix = strings.NewReplacer("unset "+env, "remove "+from, "unset it", "remove it from the config file").Replace(oe.Fix)
		default:
			oe.Fix = strings.ReplaceAll(oe.Fix, "unset "+env, "unset "+from)
		}
		return err
	}
	return err
}

// name is the setting s came from, for messages: the flag, the variable, or the config file's
// key; a setting left at its default is named by its flag.
func (s setting) name() string { return strings.TrimSuffix(s.from, " (default)") }

// isDefault reports whether no source gave the setting.
func (s setting) isDefault() bool { return s.from == "" || strings.HasSuffix(s.from, " (default)") }

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
