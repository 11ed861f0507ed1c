package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/installation"
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxValidateCommand) }

func newSandboxValidateCommand(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|-",
		Short: "Check an Installation file against the OpenShell SandboxDriver rules",
		Long: `Decode the Installation strictly (unknown keys are refused in every block occ owns) and
apply every OpenShell SandboxDriver rule. A valid file prints a one-line summary and exits 0;
an invalid one lists every problem with its YAML path and exits 1. With -o json or -o yaml the
problems are printed as a list of {path, value, message} ([] when the file is valid).
Use - to read the Installation from standard input. An input larger than 4 MiB is refused
(no Installation is that large).`,
		Example: `  # Check a file
  occ sandbox validate installation.yaml

  # Check what another tool prints, and list the problems as JSON
  cat installation.yaml | occ sandbox validate - -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSandboxValidate(g, args[0])
		},
	}
}

func runSandboxValidate(g *Globals, file string) error {
	data, err := readInput(g, file)
	if err != nil {
		return err
	}
	in, err := installation.Parse(data)
	var problems installation.Problems
	if err != nil && !errors.As(err, &problems) {
		return err
	}
	if problems == nil {
		problems = installation.Problems{}
	}
	printErr := g.print(problems, func() error {
		if len(problems) == 0 {
			_, err := fmt.Fprintf(g.Stdout, "%s is valid: %s\n", displayName(file), in.Summary())
			return err
		}
		fmt.Fprintf(g.Stderr, "%s is invalid: %s\n", displayName(file), countProblems(len(problems)))
		for _, p := range problems {
			fmt.Fprintf(g.Stderr, "  - %s\n", p.Message)
		}
		return nil
	})
	if printErr != nil {
		return printErr
	}
	if len(problems) > 0 {
		return &silentExit{code: exitError}
	}
	return nil
}

func readInput(g *Globals, file string) ([]byte, error) {
	return installation.ReadFile(file, g.Stdin)
}

func displayName(file string) string {
	if file == "-" {
		return "Installation (standard input)"
	}
	return "Installation " + file
}

func countProblems(n int) string {
	if n == 1 {
		return "1 problem"
	}
	return fmt.Sprintf("%d problems", n)
}
