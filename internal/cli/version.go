package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set by the linker (see Makefile): -X github.com/openclaw/occ/internal/cli.version=…
var (
	version = "dev"
	commit  = ""
)

// VersionInfo is what `occ version` reports.
type VersionInfo struct {
	Version   string `json:"version" yaml:"version"`
	Commit    string `json:"commit" yaml:"commit"`
	GoVersion string `json:"goVersion" yaml:"goVersion"`
	Platform  string `json:"platform" yaml:"platform"`
}

// currentVersion reads the stamped version and falls back to the VCS data Go embeds in the
// build info when the binary was built without the Makefile.
func currentVersion() VersionInfo {
	info := VersionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && info.Commit == "" {
				info.Commit = s.Value
			}
		}
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// line is the one-line form `occ version` and `occ --version` print.
func (v VersionInfo) line() string {
	return fmt.Sprintf("occ %s (commit %s, %s, %s)", v.Version, v.Commit, v.GoVersion, v.Platform)
}

func newVersionCommand(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the occ version, commit and Go version",
		Example: `  # One line, as occ --version prints it
  occ version

  # For a script or a bug report
  occ version -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := currentVersion()
			return g.print(info, func() error {
				_, err := fmt.Fprintln(g.Stdout, info.line())
				return err
			})
		},
	}
}

func newCompletionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script for bash, zsh or fish. Besides commands and flags it
completes flag values: -o/--output (table, json, yaml) and --context (the contexts of the
kubeconfig that --kubeconfig or $KUBECONFIG names).`,
		Example: `  # Load completion into the current bash session
  source <(occ completion bash)

  # Install it for zsh (a directory on $fpath)
  occ completion zsh > "${fpath[1]}/_occ"

  # Install it for fish
  occ completion fish > ~/.config/fish/completions/occ.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return cmd.Root().GenBashCompletionV2(out, true)
			case "zsh":
				return cmd.Root().GenZshCompletion(out)
			case "fish":
				return cmd.Root().GenFishCompletion(out, true)
			}
			return usageErrorf("completion shell %q is not supported: use bash, zsh or fish", args[0])
		},
	}
}
