package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/sandbox"
)

// Flags shared by the `occ sandbox` commands that drive the Compute flow. Like every flag they
// also resolve from OCC_* environment variables and the config file (OCC_INSTALLATION, …).
const (
	flagInstallation = "installation"
	flagGateway      = "gateway"
	flagRevision     = "revision"
	flagNamespace    = "namespace"
)

func addInstallationFlag(cmd *cobra.Command) {
	cmd.Flags().String(flagInstallation, "", "Installation YAML that selects the OpenShell Sandbox driver, - for standard input (required)")
}

func addGatewayFlag(cmd *cobra.Command) {
	cmd.Flags().String(flagGateway, "", "gateway endpoint (host:port or http(s) origin) replacing the openshell Backend's, e.g. an emulator or a port-forward")
}

func addRevisionFlag(cmd *cobra.Command, usage string) {
	cmd.Flags().String(flagRevision, "", usage)
}

// addNamespaceFlag adds -n/--namespace, kubectl's spelling, for the commands that take an OCC
// Namespace.
func addNamespaceFlag(cmd *cobra.Command, usage string) {
	cmd.Flags().StringP(flagNamespace, "n", "", usage)
}

// installationPath returns --installation, or a usage error naming the flag.
func installationPath(g *Globals) (string, error) {
	p := g.v.GetString(flagInstallation)
	if p == "" {
		return "", usageErrorf("--%s is required: pass the Installation YAML (for example the one `occ dev up` wrote)", flagInstallation)
	}
	return p, nil
}

// loadRevision reads --revision (standard input for -), or returns a usage error when it is
// missing. Standard input holds one document: the revision, or the Installation, not both.
func loadRevision(g *Globals) (*compute.RevisionFile, error) {
	p := g.v.GetString(flagRevision)
	if p == "" {
		return nil, usageErrorf("--%s is required: pass the revision file (see docs/revision.md)", flagRevision)
	}
	if p == "-" {
		if g.v.GetString(flagInstallation) == "-" {
			return nil, usageErrorf("--%s - and --%s - both read standard input, which holds one document: give one of them as a file", flagRevision, flagInstallation)
		}
		if g.Stdin == nil {
			return nil, usageErrorf("--%s -: no standard input to read the revision from", flagRevision)
		}
		return compute.ReadRevision(g.Stdin, "(standard input)")
	}
	return compute.LoadRevisionFile(p)
}

// sandboxLogger returns the driver's debug logger: silent unless -v was given.
func sandboxLogger(g *Globals) *slog.Logger {
	if g.Verbosity == 0 {
		return nil
	}
	return slog.New(slog.NewTextHandler(g.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// sessionOptions collects the shared settings for sandbox.Open.
func sessionOptions(g *Globals) (sandbox.Options, error) {
	path, err := installationPath(g)
	if err != nil {
		return sandbox.Options{}, err
	}
	return sandbox.Options{
		InstallationPath: path,
		Stdin:            g.Stdin,
		Kubeconfig:       g.Kubeconfig,
		KubeContext:      g.Context,
		Gateway:          g.v.GetString(flagGateway),
		Progress:         compute.Progress(newProgressPrinter(g.Stderr).Sink()),
		Logger:           sandboxLogger(g),
	}, nil
}

// printYAMLOrJSON prints v as YAML unless -o json asked for JSON; used where the natural form of
// the output is a document rather than a table.
func printDocument(g *Globals, v any, defaultYAML bool) error {
	if g.Output == "table" {
		if defaultYAML {
			b, err := marshalYAML(v)
			if err != nil {
				return err
			}
			_, err = g.Stdout.Write(b)
			return err
		}
		g2 := *g
		g2.Output = "json"
		return g2.print(v, nil)
	}
	return g.print(v, nil)
}

// sessionForRevision resolves the session options and the required --revision file, the two
// inputs every per-revision command starts from.
func sessionForRevision(g *Globals) (sandbox.Options, *compute.RevisionFile, error) {
	opts, err := sessionOptions(g)
	if err != nil {
		return sandbox.Options{}, nil, err
	}
	rf, err := loadRevision(g)
	if err != nil {
		return sandbox.Options{}, nil, err
	}
	return opts, rf, nil
}
