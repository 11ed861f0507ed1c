package cli

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
)

// registerFlagCompletions completes the values of the global flags on every command: the
// output formats for -o and the kubeconfig's contexts for --context, as kubectl does.
func registerFlagCompletions(root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
	_ = root.RegisterFlagCompletionFunc("context", completeContexts)
}

// completeContexts lists the contexts of the kubeconfig the command would load. Completion runs
// before settings are resolved, so the kubeconfig comes from the flag, then OCC_KUBECONFIG,
// then client-go's rules ($KUBECONFIG, ~/.kube/config). A kubeconfig that cannot be read
// completes to nothing rather than to an error in the middle of the user's command line.
func completeContexts(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	path, _ := cmd.Flags().GetString("kubeconfig")
	if path == "" {
		path = os.Getenv("OCC_KUBECONFIG")
	}
	if path != "" {
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
