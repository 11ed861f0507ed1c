package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
)

// registerFlagCompletions completes the values of the global flags on every command: the
// output formats for -o and the kubeconfig's contexts for --context, as kubectl does.
func registerFlagCompletions(g *Globals, root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("context", func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		return completeContexts(g, cmd, prefix)
	})
}

// completeContexts lists the contexts of the kubeconfig the command would load. Completion runs
// before the config file is read, so the kubeconfig comes from the flag, then OCC_KUBECONFIG,
// then client-go's rules ($KUBECONFIG, ~/.kube/config). A kubeconfig that cannot be read
// completes to nothing rather than to an error in the middle of the user's command line.
func completeContexts(g *Globals, cmd *cobra.Command, prefix string) ([]string, cobra.ShellCompDirective) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path := g.settingOf(cmd, "kubeconfig").raw; path != "" {
		rules.ExplicitPath = path
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for name := range raw.Contexts {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}
