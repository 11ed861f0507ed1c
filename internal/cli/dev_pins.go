package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online"
)

func init() { devSubcommands = append(devSubcommands, newDevPinsCommand) }

func newDevPinsCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "Show, verify and move the pinned artifacts 'occ dev up' installs",
		Long: `'occ dev up' installs only pinned artifacts: the OpenShell source archive (for its Helm
charts) and images, the k3s node and k3d tools images, the Agent Sandbox manifest and the OCE
base images, each with the checksum or digest it is verified against. The set is built into occ;
a pin file of the same shape replaces it (--pin-file, OCC_DEVELOPMENT_PIN_FILE).

show prints the pins in effect with their notes; digest prints their stable hash (a cache key);
verify checks them online at their registries and download sites; resolve writes the pin file
of another OpenShell release.`,
		Example: `  # The pins in effect, and where they came from
  occ dev pins show

  # Check every pin at its registry or download site (no Docker needed)
  occ dev pins verify

  # Pin another OpenShell release, check it, and use it
  occ dev pins resolve --openshell 0.1.5 --out pins-0.1.5.yaml
  occ dev pins verify --pin-file pins-0.1.5.yaml
  occ dev up --pin-file pins-0.1.5.yaml`,
	}
	cmd.AddCommand(newDevPinsShowCommand(g), newDevPinsDigestCommand(g), newDevPinsVerifyCommand(g), newDevPinsResolveCommand(g))
	return cmd
}

// addPinFileFlag registers the pin file setting on a command that reads pins.
func addPinFileFlag(cmd *cobra.Command) {
	cmd.Flags().String(settingPinFile.flag, "", settingPinFile.usage)
}

// pinsInEffect loads the pins the command's settings select. A pin file that cannot be read or
// is invalid is a usage error: the fix is in the setting or the file.
func pinsInEffect(g *Globals, cmd *cobra.Command) (*pins.Set, string, error) {
	pinFile := g.lookup(cmd, settingPinFile.flag, settingPinFile.env)
	from := ""
	if pinFile.raw != "" {
		from = pinFile.name()
	}
	set, err := pins.Resolve(pinFile.raw)
	if err != nil {
		return nil, "", &usageError{err: err}
	}
	return set, from, nil
}

// pinsShown is the document `occ dev pins show` prints.
type pinsShown struct {
	// Source is "built in" or the pin file's path.
	Source string `json:"source"`
	// BuiltIn is set when the pins are the ones built into occ.
	BuiltIn bool `json:"builtIn"`
	// From names the setting that selected the pin file.
	From string       `json:"from,omitempty"`
	Pins []pins.Entry `json:"pins"`
}

func newDevPinsShowCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the pins in effect, where they came from, and their notes",
		Long: `Print every pin 'occ dev up' would use — built into occ, or read from the pin file that
--pin-file or OCC_DEVELOPMENT_PIN_FILE names — with the notes the set carries beside the pin
each is about (a known defect of the pinned release, a digest not yet confirmed). Nothing is
contacted. -o json|yaml prints the same as a document.`,
		Example: `  # The built-in pins
  occ dev pins show

  # A pin file's pins, as JSON
  occ dev pins show --pin-file pins-0.1.5.yaml -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, from, err := pinsInEffect(g, cmd)
			if err != nil {
				return err
			}
			doc := pinsShown{Source: set.SourceName(), BuiltIn: set.Source == pins.EmbeddedSource, Pins: set.Entries()}
			if !doc.BuiltIn {
				doc.From = from
			}
			return g.print(doc, func() error { return printPinsShown(g.Stdout, doc) })
		},
	}
	addPinFileFlag(cmd)
	return cmd
}

// pinsDigest is the document `occ dev pins digest -o json` prints.
type pinsDigest struct {
	// Digest is the hex SHA-256 of the set's canonical encoding.
	Digest string `json:"digest"`
	// Source is "built in" or the pin file's path.
	Source string `json:"source"`
}

func newDevPinsDigestCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "digest",
		Short: "Print a stable hash of the pins in effect, for cache keys",
		Long: `Print the SHA-256 (hex, one line) of the pins in effect — built into occ, or the pin file
--pin-file or OCC_DEVELOPMENT_PIN_FILE names. It is computed over the parsed pins, not the file:
comments, key order and whitespace do not change it; any pinned value does. Nothing is
contacted. -o json prints {"digest": ..., "source": ...}.`,
		Example: `  # A CI cache key for the bundle of the pins in effect
  key="occ-bundle-$(occ dev pins digest)"`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, _, err := pinsInEffect(g, cmd)
			if err != nil {
				return err
			}
			digest, err := set.Digest()
			if err != nil {
				return err
			}
			doc := pinsDigest{Digest: digest, Source: set.SourceName()}
			return g.print(doc, func() error {
				_, err := fmt.Fprintln(g.Stdout, digest)
				return err
			})
		},
	}
	addPinFileFlag(cmd)
	return cmd
}

func printPinsShown(w io.Writer, doc pinsShown) error {
	if doc.BuiltIn {
		fmt.Fprintf(w, "Pins in effect: built into occ (%s)\n\n", pins.EmbeddedSource)
	} else {
		fmt.Fprintf(w, "Pins in effect: %s (from %s)\n\n", doc.Source, doc.From)
	}
	width := 0
	for _, e := range doc.Pins {
		width = max(width, len(e.Key))
	}
	indent := strings.Repeat(" ", width+2)
	for _, e := range doc.Pins {
		fmt.Fprintf(w, "%-*s  %s\n", width, e.Key, e.Value)
		if e.SHA256 != "" {
			fmt.Fprintf(w, "%ssha256 %s\n", indent, e.SHA256)
		}
		if e.Detail != "" {
			fmt.Fprintf(w, "%s%s\n", indent, e.Detail)
		}
		for _, n := range e.Notes {
			for i, line := range wrap(n, 96-len(indent)) {
				label := "note: "
				if i > 0 {
					label = "      "
				}
				fmt.Fprintf(w, "%s%s%s\n", indent, label, line)
			}
		}
	}
	return nil
}

// wrap breaks text into lines of at most width columns at spaces (a longer word gets a line of
// its own).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

func newDevPinsVerifyCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every pin online: digests, tags, platforms and checksums",
		Long: `Check the pins in effect where they are served, without Docker: every image's digest
resolves at its registry, its tag serves that digest, and the digest is a multi-platform index
holding linux/amd64 and linux/arm64 (a single-platform manifest is named with its platform and
misses the others, so an engine of another architecture would refuse it at 'occ dev up'); the
OpenShell source archive and the Agent Sandbox manifest download and match their sha256 (they
stream through the checksum; nothing is stored).

Registry credentials come from your docker config (DOCKER_CONFIG, or ~/.docker/config.json) and
its credential helpers, as docker reads them; none is ever printed. The exit status is 1 when
any check misses.`,
		Example: `  # Check the built-in pins
  occ dev pins verify

  # Check a pin file written by 'occ dev pins resolve', as JSON for a script
  occ dev pins verify --pin-file pins-0.1.5.yaml -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, _, err := pinsInEffect(g, cmd)
			if err != nil {
				return err
			}
			rep, err := online.Verify(cmd.Context(), set, online.Deps{})
			if err != nil {
				return err
			}
			if err := g.print(rep, func() error { return printVerifyReport(g.Stdout, rep) }); err != nil {
				return err
			}
			if n := rep.Misses(); n > 0 {
				var missed []string
				for _, c := range rep.Checks {
					if !c.OK {
						missed = append(missed, c.Pin+" "+c.Check)
					}
				}
				return fmt.Errorf("%d of %d pin checks missed (%s); see the details above, fix the pin file and verify it again", n, len(rep.Checks), strings.Join(missed, ", "))
			}
			return nil
		},
	}
	addPinFileFlag(cmd)
	return cmd
}

func printVerifyReport(w io.Writer, rep *online.Report) error {
	source := rep.Source
	if source == pins.EmbeddedSource {
		source = "built into occ (" + source + ")"
	}
	fmt.Fprintf(w, "Pins: %s\n", source)
	last := ""
	for _, c := range rep.Checks {
		if c.Pin != last {
			fmt.Fprintf(w, "\n%s  %s\n", c.Pin, c.Subject)
			last = c.Pin
		}
		result := "ok  "
		if !c.OK {
			result = "MISS"
		}
		fmt.Fprintf(w, "  %s  %-14s %s\n", result, c.Check, c.Detail)
	}
	if n := rep.Misses(); n > 0 {
		_, err := fmt.Fprintf(w, "\n%d of %d checks missed.\n", n, len(rep.Checks))
		return err
	}
	_, err := fmt.Fprintf(w, "\nAll %d checks passed.\n", len(rep.Checks))
	return err
}

func newDevPinsResolveCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resolve --openshell VERSION [--out FILE]",
		Short: "Write the pin file of another OpenShell release",
		Long: `Derive the complete pin set of another OpenShell release from the release itself: download
its tag archive (the URL follows the pattern of the pins in effect) and compute its sha256,
check that the Gateway and Workspace charts are where the pins expect them (a directory with a
Chart.yaml under the helm directory), read the release commit from the archive's pax global
header (git archive writes it there; give --commit when it is absent), and resolve the
gateway, sandbox and supervisor images, tagged by that commit, to the digests of their
multi-platform indexes. Every other pin is kept from the pins in effect unless a flag replaces
it; notes about pins that changed are dropped. --routing (alone, or with --openshell) records
the images the routing controllers' manifests name: each manifest must have its pinned sha256,
and each image is pinned by its tag and the digest of its multi-platform index.

The result is validated as a pin file and written to --out (never over an existing file
without --force; the replacement is atomic), or printed when --out is not given. It is refused
when the archive or an image does not exist, the charts moved, or an image lacks linux/amd64 or
linux/arm64, naming the pin and the fix.`,
		Example: `  # Pin OpenShell 0.1.5 and check the result
  occ dev pins resolve --openshell 0.1.5 --out pins-0.1.5.yaml
  occ dev pins verify --pin-file pins-0.1.5.yaml

  # Pin the routing controllers' images, so that up installs them
  occ dev pins resolve --routing --out pins-routed.yaml

  # The same with a newer k3s, printing the pin file
  occ dev pins resolve --openshell v0.1.5 --k3s-image docker.io/rancher/k3s:v1.37.1-k3s1`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, _, err := pinsInEffect(g, cmd)
			if err != nil {
				return err
			}
			f := cmd.Flags()
			version, _ := f.GetString("openshell")
			commit, _ := f.GetString("commit")
			out, _ := f.GetString("out")
			force, _ := f.GetBool("force")
			agent, _ := f.GetString("agent-sandbox-version")
			routing, _ := f.GetBool("routing")
			if version == "" && !routing {
				return usageErrorf("--openshell or --routing is required: name the OpenShell release to pin (for example --openshell 0.1.5), or resolve the routing controllers' images (--routing)")
			}
			if version == "" && (commit != "" || agent != "") {
				return usageErrorf("--commit and --agent-sandbox-version go with --openshell; give --openshell VERSION, or drop them")
			}
			if force && out == "" {
				return usageErrorf("--force replaces the file --out names; give --out FILE, or drop --force")
			}
			// A file --out may not replace is refused before anything is downloaded (the write
			// itself still refuses with O_EXCL, should one appear meanwhile).
			if out != "" && !force {
				if _, err := os.Lstat(out); err == nil {
					return &usageError{err: &pins.ExistsError{Path: out}}
				}
			}
			images := map[string]string{}
			for key, flag := range online.ImageOptions {
				images[key], _ = f.GetString(strings.TrimPrefix(flag, "--"))
			}
			var doc any
			var encode func(time.Time) ([]byte, error)
			var account func(w io.Writer, out string) error
			if version == "" {
				for key, ref := range images {
					if ref != "" {
						return usageErrorf("%s goes with --openshell; give --openshell VERSION, or drop it", online.ImageOptions[key])
					}
				}
				rr, err := online.ResolveRouting(cmd.Context(), base, online.Deps{})
				if err != nil {
					return err
				}
				doc, encode, account = rr, rr.Encode, func(w io.Writer, out string) error { return printRoutingResolved(w, rr, out) }
			} else {
				res, err := online.Resolve(cmd.Context(), online.ResolveOptions{
					Base: base, Version: version, Commit: commit, Images: images, AgentSandboxVersion: agent,
				}, online.Deps{})
				if err != nil {
					return err
				}
				if routing {
					res.Set.Source = base.Source
					rr, err := online.ResolveRouting(cmd.Context(), res.Set, online.Deps{})
					if err != nil {
						return err
					}
					res.WithRouting(rr)
				}
				doc, encode, account = res, res.Encode, func(w io.Writer, out string) error { return printResolved(w, res, out) }
			}
			data, err := encode(time.Now())
			if err != nil {
				return err
			}
			if out == "" {
				// The pin file is the output; the account of it goes to stderr.
				if err := account(g.Stderr, ""); err != nil {
					return err
				}
				_, err := g.Stdout.Write(data)
				return err
			}
			if err := pins.WriteFile(out, data, force); err != nil {
				var exists *pins.ExistsError
				if errors.As(err, &exists) {
					return &usageError{err: err}
				}
				return err
			}
			return g.print(doc, func() error { return account(g.Stdout, out) })
		},
	}
	f := cmd.Flags()
	f.String("openshell", "", "the OpenShell release to pin, for example 0.1.5 or v0.1.5 (required)")
	f.String("commit", "", "the release's 40-hex commit, needed only when its archive does not carry it")
	f.String("out", "", "write the pin file here (default: print it)")
	f.Bool("force", false, "replace the file --out names when it exists")
	f.String("agent-sandbox-version", "", "replace the Agent Sandbox release too (its manifest URL follows the pinned one's pattern)")
	f.Bool("routing", false, "record the images the routing controllers' manifests name, by their tags and index digests (alone, or with --openshell)")
	for key, flag := range online.ImageOptions {
		f.String(strings.TrimPrefix(flag, "--"), "", "replace "+key+": repository:tag (resolved to its digest) or repository@sha256:…; must be a multi-platform index")
	}
	addPinFileFlag(cmd)
	return cmd
}

func printResolved(w io.Writer, r *online.Resolved, out string) error {
	fmt.Fprintf(w, "OpenShell %s, commit %s (from %s)\n", r.Version, r.Commit, r.CommitSource)
	fmt.Fprintf(w, "  source archive  %s\n                  %d bytes, sha256 %s, top directory %s\n", r.Archive.URL, r.Archive.Size, r.Archive.SHA256, r.Archive.TopDirectory)
	for _, img := range r.Images {
		fmt.Fprintf(w, "  %s  %s (%s)\n", img.Pin, img.Reference, strings.Join(img.Platforms, ", "))
	}
	if a := r.AgentSandbox; a != nil {
		fmt.Fprintf(w, "  %s  %s (%d bytes, sha256 %s)\n", pins.KeyAgentSandbox, a.URL, a.Size, a.SHA256)
	}
	if r.Routing != nil {
		printRoutingLines(w, r.Routing)
	}
	fmt.Fprintf(w, "  kept from %s: %s\n", r.Base, strings.Join(r.Kept, ", "))
	return printDroppedAndWritten(w, r.DroppedNotes, out)
}

// printDroppedAndWritten ends a resolve's account: the notes it dropped, and the file it wrote.
func printDroppedAndWritten(w io.Writer, dropped []pins.Note, out string) error {
	for _, n := range dropped {
		fmt.Fprintf(w, "  dropped the note about %s (it described the old value)\n", n.Pin)
	}
	if out == "" {
		return nil
	}
	_, err := fmt.Fprintf(w, "Wrote %s. Check it with: occ dev pins verify --pin-file %s\n", out, out)
	return err
}

// printRoutingLines lists the routing manifests and the images resolved from them.
func printRoutingLines(w io.Writer, r *online.RoutingResolved) {
	for _, m := range r.Manifests {
		fmt.Fprintf(w, "  routing manifest  %s (%d bytes, sha256 %s, as pinned)\n", m.URL, m.Size, m.SHA256)
	}
	for _, img := range r.Images {
		fmt.Fprintf(w, "  %s  %s (%s)\n", img.Pin, img.Reference, strings.Join(img.Platforms, ", "))
	}
}

func printRoutingResolved(w io.Writer, r *online.RoutingResolved, out string) error {
	fmt.Fprintf(w, "Routing controllers' images, from %s\n", r.Base)
	printRoutingLines(w, r)
	return printDroppedAndWritten(w, r.DroppedNotes, out)
}
