package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// commandGroups returns every command that only groups subcommands (occ, occ dev, occ sandbox,
// and any added later), so the rule is checked for each without a list to keep up to date.
func commandGroups(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	if c.HasSubCommands() {
		out = append(out, c)
	}
	for _, sub := range c.Commands() {
		out = append(out, commandGroups(sub)...)
	}
	return out
}

// A user mistypes a subcommand (`occ sandbox valdate x`, `occ dev upp`): every command group
// says "unknown command" with a suggestion and exits 2, as the top level does, instead of
// printing its help and exiting 0.
func TestUnknownSubcommandIsUsageError(t *testing.T) {
	isolate(t)
	groups := commandGroups(NewRootCommand(&Globals{}))
	if len(groups) < 3 {
		t.Fatalf("found %d command groups, want at least occ, occ dev and occ sandbox", len(groups))
	}
	for _, grp := range groups {
		path := strings.Fields(grp.CommandPath())[1:]
		var first *cobra.Command
		for _, sub := range grp.Commands() {
			if sub.IsAvailableCommand() && len(sub.Name()) >= 4 {
				first = sub
				break
			}
		}
		if first == nil {
			continue
		}
		// Drop one letter of a real subcommand: close enough for a suggestion.
		typo := first.Name()[:1] + first.Name()[2:]
		for _, args := range [][]string{append(append([]string{}, path...), typo, "x"), append(append([]string{}, path...), "no-such-command")} {
			code, out, errOut := run(t, args...)
			if code != exitUsage {
				t.Errorf("occ %s: exit %d, want 2 (stdout %q, stderr %q)", strings.Join(args, " "), code, out, errOut)
			}
			want := `unknown command "` + args[len(path)] + `" for "` + grp.CommandPath() + `"`
			if !strings.HasPrefix(errOut, "Error: "+want) {
				t.Errorf("occ %s: stderr %q, want it to start with %q", strings.Join(args, " "), errOut, "Error: "+want)
			}
			if args[len(path)] == typo && !strings.Contains(errOut, "Did you mean this?\n\t"+first.Name()) {
				t.Errorf("occ %s: stderr %q does not suggest %q", strings.Join(args, " "), errOut, first.Name())
			}
		}
	}
	// The two cases the issue reproduced.
	for _, tc := range []struct {
		args    []string
		suggest string
	}{
		{[]string{"sandbox", "valdate", "x"}, "validate"},
		{[]string{"dev", "upp"}, "up"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, "unknown command") || !strings.Contains(errOut, "Did you mean this?\n\t"+tc.suggest+"\n") {
			t.Errorf("occ %s: exit %d, stderr %q; want exit 2, unknown command, suggesting %s", strings.Join(tc.args, " "), code, errOut, tc.suggest)
		}
	}
	// A group named alone still prints its help and succeeds.
	for _, args := range [][]string{{"sandbox"}, {"dev"}} {
		if code, out, errOut := run(t, args...); code != 0 || !strings.Contains(out, "Available Commands:") {
			t.Errorf("occ %s: exit %d, stdout %q, stderr %q; want its help and exit 0", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// A user asks for help on a subcommand that does not exist (`occ dev nosuch --help`): every
// command group refuses it as a usage error (exit 2, "unknown command") as it does without
// --help (and `occ help dev nosuch`), instead of printing its own help and exiting 0; help on a
// group itself still works.
func TestUnknownSubcommandWithHelpIsUsageError(t *testing.T) {
	isolate(t)
	for _, grp := range commandGroups(NewRootCommand(&Globals{})) {
		path := strings.Fields(grp.CommandPath())[1:]
		for _, help := range []string{"--help", "-h"} {
			args := append(append([]string{}, path...), "nosuch", help)
			code, out, errOut := run(t, args...)
			want := `unknown command "nosuch" for "` + grp.CommandPath() + `"`
			if code != exitUsage || !strings.HasPrefix(errOut, "Error: "+want) || out != "" {
				t.Errorf("occ %s: exit %d, want 2 with %q\nstdout %q\nstderr %q", strings.Join(args, " "), code, want, out, errOut)
			}
		}
		helpArgs := append(append([]string{"help"}, path...), "nosuch")
		if code, out, errOut := run(t, helpArgs...); code != exitUsage || !strings.Contains(errOut, `unknown command "nosuch" for "`+grp.CommandPath()+`"`) || out != "" {
			t.Errorf("occ %s: exit %d, want 2\nstdout %q\nstderr %q", strings.Join(helpArgs, " "), code, out, errOut)
		}
		args := append(append([]string{}, path...), "--help")
		if code, out, _ := run(t, args...); code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, grp.CommandPath()) {
			t.Errorf("occ %s: exit %d, want its help:\n%s", strings.Join(args, " "), code, out)
		}
	}
}
