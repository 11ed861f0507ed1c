// Package cli is the cobra command tree of occ. Commands only bind flags to option structs and
// call library functions; printing (table, JSON, YAML, progress) lives here and nowhere else.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/sandbox"
)

// Exit codes: 0 success, 1 a failed operation, 2 a usage error (bad flag, argument or setting).
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks an error the user fixes by changing the command line; it exits 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// silentExit carries an exit code for a command that already printed what went wrong (for
// example `sandbox validate`, which lists every problem itself).
type silentExit struct{ code int }

func (e *silentExit) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Globals are the settings every command shares. They are resolved from flags, then OCC_*
// environment variables, then the optional config file, in that order.
type Globals struct {
	Kubeconfig string
	Context    string
	Output     string
	Verbosity  int

	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	v *viper.Viper
	// helpErr is what help refused to print (help on a subcommand that does not exist); help
	// cannot return an error through cobra, so Execute reports it.
	helpErr error
}

// outputFormats are the values -o/--output accepts.
var outputFormats = []string{"table", "json", "yaml"}

// Execute runs occ with args and returns the process exit code.
func Execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stdin = newInterruptibleStdin(ctx, stdin)
	g := &Globals{Stdin: stdin, Stdout: stdout, Stderr: stderr, v: viper.New()}
	defer routeLibraryLog(stderr)()
	root := NewRootCommand(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		err = g.helpErr
	}
	if err == nil {
		return exitOK
	}
	var silent *silentExit
	if errors.As(err, &silent) {
		return silent.code
	}
	fmt.Fprintf(stderr, "Error: %s\n", err)
	if isUsageError(err) {
		return exitUsage
	}
	return exitError
}

// isUsageError reports whether err is the user's to fix on the command line or in the
// environment: a usage error of the CLI, a bad setting of `occ dev` (*option.Error, whichever
// layer found it), or a refused gateway override.
func isUsageError(err error) bool {
	var u *usageError
	var bad *option.Error
	var gw *sandbox.GatewayOverrideError
	if errors.As(err, &u) || errors.As(err, &bad) || errors.As(err, &gw) {
		return true
	}
	// cobra reports unknown commands and wrong argument counts as plain errors.
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// NewRootCommand builds the whole command tree around g.
func NewRootCommand(g *Globals) *cobra.Command {
	info := currentVersion()
	root := &cobra.Command{
		Use:   "occ",
		Short: "OpenClaw Enterprise engineers' tool: local control plane and OpenShell sandbox driver",
		Long: `occ brings up a disposable local OpenClaw Enterprise development environment on a laptop
with Docker (occ dev: a k3d cluster with the pinned OpenShell platform, and from an OCE
checkout the OCE control plane in Compose or in the cluster) and drives the OpenShell
SandboxDriver core by hand against any cluster and OpenShell gateway (occ sandbox).

Every setting resolves from its flag, then an OCC_* environment variable (OCC_KUBECONFIG,
OCC_OUTPUT, OCC_INSTALLATION, …), then the config file.`,
		Example: `  # Check an Installation, then see the exact request a revision would send
  occ sandbox validate installation.yaml
  occ sandbox render --installation installation.yaml --revision revision.yaml

  # Create a k3d cluster in Docker with the OpenShell platform
  occ dev up

  # Any command, against another context, printing JSON
  occ sandbox status --context k3d-occ-dev --installation installation.yaml --revision revision.yaml -o json

  # Enable shell completion (commands, flags, -o values and --context names)
  source <(occ completion bash)`,
		Version:           info.Version,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.resolve(cmd)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	// occ --version prints what occ version prints. The template is the literal line, with any
	// template syntax a version string could hold escaped.
	root.SetVersionTemplate(strings.NewReplacer("{{", "{{`{{`}}").Replace(info.line()) + "\n")

	pf := root.PersistentFlags()
	pf.String("kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	pf.String("context", "", "kubeconfig context to use (default: the current context)")
	pf.StringP("output", "o", "table", "output format: table|json|yaml")
	pf.CountP("verbosity", "v", "more detail on stderr (repeat for more)")
	pf.String("config", "", "config file (default: $XDG_CONFIG_HOME/occ/config.yaml)")

	root.AddCommand(newVersionCommand(g), newCompletionCommand(), newDevCommand(g), newSandboxCommand(g))
	root.AddCommand(newGatewayEmulatorCommand(g))
	registerFlagCompletions(g, root)
	refuseUnknownSubcommands(root)
	refuseHelpOnUnknownSubcommands(g, root)
	return root
}

// refuseHelpOnUnknownSubcommands makes help on a subcommand that does not exist a usage error,
// as the subcommand itself is: `occ dev nosuch --help` and `occ help dev nosuch` say "unknown
// command" and exit 2 instead of printing the help of occ dev and exiting 0.
func refuseHelpOnUnknownSubcommands(g *Globals, root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if extra := cmd.Flags().Args(); cmd.HasSubCommands() && len(extra) > 0 {
			g.helpErr = unknownSubcommand(cmd, extra[0])
			return
		}
		help(cmd, args)
	})
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: occ help sandbox validate.",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil {
				return &usageError{err: err}
			}
			if len(rest) > 0 {
				return unknownSubcommand(cmd, rest[0])
			}
			return cmd.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	})
}

// unknownSubcommand is the usage error for a subcommand cmd does not have.
func unknownSubcommand(cmd *cobra.Command, typed string) error {
	return usageErrorf("unknown command %q for %q%s", typed, cmd.CommandPath(), suggestions(cmd, typed))
}

// refuseUnknownSubcommands makes every command that only groups subcommands (occ, occ dev,
// occ sandbox, …) treat a leftover argument as a mistyped subcommand: "unknown command" with
// cobra's suggestions, exit 2. Cobra itself checks this only at the root; a nested group that
// cannot run prints its help and exits 0, so `occ sandbox valdate x` looked like success.
// Named alone, a group still prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	// Running the group alone only prints this help, so its usage line takes no flags.
	c.DisableFlagsInUseLine = true
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return unknownSubcommand(cmd, args[0])
	}
}

// suggestions formats cobra's "did you mean" list for a mistyped subcommand of cmd.
func suggestions(cmd *cobra.Command, typed string) string {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	found := cmd.SuggestionsFor(typed)
	if len(found) == 0 {
		return fmt.Sprintf("; see '%s --help'", cmd.CommandPath())
	}
	var b strings.Builder
	b.WriteString("\n\nDid you mean this?")
	for _, s := range found {
		fmt.Fprintf(&b, "\n\t%s", s)
	}
	return b.String()
}

// resolve fills g from flags > OCC_* environment > config file, and checks the shared values.
func (g *Globals) resolve(cmd *cobra.Command) error {
	v := g.v
	v.SetEnvPrefix("OCC")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	var bindErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err := v.BindPFlag(f.Name, f); err != nil && bindErr == nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return bindErr
	}
	if err := g.readConfigFile(cmd); err != nil {
		return err
	}
	g.Kubeconfig = v.GetString("kubeconfig")
	g.Context = v.GetString("context")
	g.Output = strings.ToLower(v.GetString("output"))
	verbosity, _, err := g.intSetting(cmd, "verbosity", 0, 10)
	if err != nil {
		return err
	}
	g.Verbosity = verbosity
	if !contains(outputFormats, g.Output) {
		return usageErrorf("--output %q is not supported: use one of %s", g.Output, strings.Join(outputFormats, ", "))
	}
	return nil
}

func (g *Globals) readConfigFile(cmd *cobra.Command) error {
	path, explicit := g.v.GetString("config"), true
	if path == "" {
		explicit = false
		dir := os.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil
			}
			dir = filepath.Join(home, ".config")
		}
		path = filepath.Join(dir, "occ", "config.yaml")
	}
	if _, err := os.Stat(path); err != nil {
		if explicit {
			return usageErrorf("--config %q cannot be read: %v", path, err)
		}
		return nil
	}
	g.v.SetConfigFile(path)
	g.v.SetConfigType("yaml")
	if err := g.v.ReadInConfig(); err != nil {
		return fmt.Errorf("read config file %s: %w (fix the YAML or remove the file)", path, err)
	}
	_ = cmd
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// exactArgs is cobra.ExactArgs with a usage error, so a wrong count exits 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %d argument(s), got %d; see '%s --help'", cmd.CommandPath(), n, len(args), cmd.CommandPath())
		}
		return nil
	}
}
