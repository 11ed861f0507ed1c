package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// setting is the text of one flag's value and where it came from, in the precedence every
// setting follows (lookup): the flag, then its environment variable, then the config file, then
// the flag's default. Typed settings are parsed from this text strictly, so a value of the wrong
// type is an error naming its source and the value, wherever it came from.
type setting struct {
	raw string
	// from names the source for messages: "--tail", "OCC_TAIL", "tail in the config file", or
	// "--tail (default)".
	from string
}

// envName is the OCC_* variable of a flag.
func envName(flag string) string { return "OCC_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_")) }

// settingOf resolves flag for cmd.
func (g *Globals) settingOf(cmd *cobra.Command, flag string) setting {
	return g.lookup(cmd, flag, "")
}

// lookup is the one resolver of occ's settings: the flag, then the setting's own variable env
// (the `occ dev` settings have one), then OCC_<FLAG>, then the config file, then the flag's
// default. A setting without a flag comes from env alone; one that nothing gives has an empty
// source.
func (g *Globals) lookup(cmd *cobra.Command, flag, env string) setting {
	var f *pflag.Flag
	if flag != "" {
		f = cmd.Flags().Lookup(flag)
	}
	if f != nil && f.Changed {
		return setting{raw: f.Value.String(), from: "--" + flag}
	}
	if v, ok := os.LookupEnv(env); ok && env != "" && v != "" {
		return setting{raw: v, from: env}
	}
	if flag == "" {
		return setting{}
	}
	// The generic OCC_<FLAG> gives only a setting without a variable of its own: OCC_NAMESPACE is
	// `occ sandbox`'s namespace, never `occ dev up`'s (OCC_DEVELOPMENT_KUBERNETES_NAMESPACE).
	if v, ok := os.LookupEnv(envName(flag)); ok && v != "" && env == "" {
		return setting{raw: v, from: envName(flag)}
	}
	if g.v.InConfig(flag) {
		return setting{raw: fmt.Sprint(g.v.Get(flag)), from: flag + " in the config file"}
	}
	if f != nil {
		return setting{raw: f.DefValue, from: "--" + flag + " (default)"}
	}
	return setting{from: "--" + flag}
}

// bad is the usage error for a setting whose value breaks rule.
func (s setting) bad(rule string) error {
	if strings.HasPrefix(s.from, "--") {
		return usageErrorf("%s %q %s", s.from, s.raw, rule)
	}
	return usageErrorf("%s=%q %s", s.from, s.raw, rule)
}

// intSetting reads a whole-number setting between lo and hi.
func (g *Globals) intSetting(cmd *cobra.Command, flag string, lo, hi int) (int, setting, error) {
	s := g.settingOf(cmd, flag)
	n, err := strconv.Atoi(strings.TrimSpace(s.raw))
	if err != nil || strings.TrimSpace(s.raw) != s.raw {
		return 0, s, s.bad(fmt.Sprintf("is not a whole number: give one from %d to %d", lo, hi))
	}
	if n < lo || n > hi {
		return n, s, s.bad(fmt.Sprintf("is out of range: give a whole number from %d to %d", lo, hi))
	}
	return n, s, nil
}

// durationSetting reads a positive duration setting (90s, 10m).
func (g *Globals) durationSetting(cmd *cobra.Command, flag string) (time.Duration, error) {
	s := g.settingOf(cmd, flag)
	d, err := time.ParseDuration(s.raw)
	if err != nil {
		return 0, s.bad("is not a duration: write it like 90s or 10m")
	}
	if d <= 0 {
		return 0, s.bad("must be a positive duration (for example 5m)")
	}
	return d, nil
}
