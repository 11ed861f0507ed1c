package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins/online"
)

func init() { devSubcommands = append(devSubcommands, newDevBundleCommand) }

func newDevBundleCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Put every pinned artifact into one verified file, for offline use and CI caches",
		Long: `create fetches every artifact of the pins in effect (the OpenShell source archive and images,
the k3s node and k3d tools images, the Agent Sandbox manifest, the routing controllers'
manifests and images), verifies each against its pin and writes one tar: an OCI image layout
with each pinned index and its chosen platforms' content, the files by sha256, and the pin set.
inspect says what a bundle holds; verify re-hashes all of it. Format: docs/bundle.md.`,
		Example: `  # Bundle the built-in pins for this machine's platform, look at it, check it
  occ dev bundle create --out occ-bundle.tar
  occ dev bundle inspect occ-bundle.tar
  occ dev bundle verify occ-bundle.tar`,
	}
	cmd.AddCommand(newDevBundleCreateCommand(g), newDevBundleInspectCommand(g), newDevBundleVerifyCommand(g))
	return cmd
}

// progressOut is where a command's progress goes: stdout for people; with -o json|yaml stdout
// carries only the document.
func (g *Globals) progressOut() io.Writer {
	if g.Output != "table" {
		return g.Stderr
	}
	return g.Stdout
}

func newDevBundleCreateCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create [--out FILE] [--platform LIST]",
		Short: "Fetch and verify every pinned artifact into one bundle file",
		Long: `Fetch every artifact of the pins in effect, verify each against its pin, and write one bundle
file (a tar). Images keep their pinned index (digest unchanged) with the content of the chosen
platforms only (--platform; default this machine's, linux/<arch>). An image pin that is not a
multi-platform index, or lacks a chosen platform, is refused before any layer is downloaded.
An interrupted create resumes: FILE.partial/ keeps what was verified, and the next run fetches
only the rest. The file appears whole or not at all.`,
		Example: `  # A bundle for Intel and ARM engines alike
  occ dev bundle create --platform linux/amd64,linux/arm64 --out occ-bundle.tar

  # A CI cache keyed by the pins
  occ dev bundle create --out "occ-bundle-$(occ dev pins digest).tar"`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, _, err := pinsInEffect(g, cmd)
			if err != nil {
				return err
			}
			f := cmd.Flags()
			out, _ := f.GetString("out")
			platformList, _ := f.GetString("platform")
			force, _ := f.GetBool("force")
			platforms, err := pinbundle.ParsePlatforms(platformList)
			if err != nil {
				return usageErrorf("%v", err)
			}
			if out == "" {
				digest, err := set.Digest()
				if err != nil {
					return err
				}
				out = "occ-bundle-" + digest[:12] + ".tar"
			}
			c, err := pinbundle.Create(cmd.Context(), pinbundle.CreateOptions{
				Pins: set, Platforms: platforms, Out: out, Force: force, Deps: online.Deps{},
				Progress: newProgressPrinter(g.progressOut()).Sink(),
			})
			var exists *pinbundle.ExistsError
			if errors.As(err, &exists) {
				return &usageError{err: err}
			}
			if err != nil {
				return err
			}
			return g.print(c, func() error {
				var size int64
				for _, a := range c.Artifacts {
					size += a.Size
				}
				_, err := fmt.Fprintf(g.Stdout, "Wrote %s: %d artifacts (%s) for %s, pins %s (%s).\nCheck it with: occ dev bundle verify %s\n",
					out, len(c.Artifacts), pinbundle.FormatSize(size), strings.Join(c.Platforms, ", "), c.Pins.Digest, c.Pins.Source, out)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.String("out", "", "the bundle file (default occ-bundle-<first 12 of the pins digest>.tar)")
	f.String("platform", pinbundle.DefaultPlatform(), "comma-separated platforms whose image content the bundle holds")
	f.Bool("force", false, "replace the file --out names when it exists")
	addPinFileFlag(cmd)
	return cmd
}

func newDevBundleInspectCommand(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE",
		Short: "Print a bundle's pins and artifacts, and whether they are the pins built into occ",
		Long: `Print the bundle's pin set (digest and source), whether it is the set built into this occ
(same digest), and every artifact with its digest, size and platforms. Only the bundle's table
of contents is read; verify checks the content. -o json prints the same as a document.`,
		Example: `  occ dev bundle inspect occ-bundle.tar -o json`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := pinbundle.Inspect(args[0])
			if err != nil {
				return err
			}
			return g.print(in, func() error { return printBundleInspection(g.Stdout, args[0], in) })
		},
	}
}

func printBundleInspection(w io.Writer, path string, in *pinbundle.Inspection) error {
	same := "the pins built into this occ"
	if !in.BuiltIn {
		same = "not the pins built into this occ (" + in.BuiltInDigest + ")"
	}
	fmt.Fprintf(w, "Bundle:    %s\nPins:      %s from %s\n           %s\nPlatforms: %s\n\n", path, in.Pins.Digest, in.Pins.Source, same, strings.Join(in.Platforms, ", "))
	for _, a := range in.Artifacts {
		fmt.Fprintf(w, "%s  %s\n  %s  %s", a.Pin, a.Reference, a.Digest, pinbundle.FormatSize(a.Size))
		var plats []string
		for _, p := range a.Platforms {
			plats = append(plats, p.Platform)
		}
		if len(plats) > 0 {
			fmt.Fprintf(w, "  %s", strings.Join(plats, ", "))
		}
		fmt.Fprintln(w)
	}
	return nil
}

func newDevBundleVerifyCommand(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "verify FILE",
		Short: "Re-hash a bundle and check that it holds every artifact of its pins",
		Long: `Re-hash every blob of the bundle and check each image's chain (index → manifest → config and
layers) for the platforms the bundle claims, every file, and that every pin of the bundle's pin
set is there. A truncated, altered or incomplete bundle is refused, naming each artifact by its
pin and digest; the exit status is then 1.`,
		Example: `  occ dev bundle verify occ-bundle.tar`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := pinbundle.Verify(cmd.Context(), args[0], newProgressPrinter(g.progressOut()).Sink())
			if err != nil {
				return err
			}
			return g.print(c, func() error {
				_, err := fmt.Fprintf(g.Stdout, "Bundle %s is intact: %d artifacts for %s, pins %s.\n", args[0], len(c.Artifacts), strings.Join(c.Platforms, ", "), c.Pins.Digest)
				return err
			})
		},
	}
}
