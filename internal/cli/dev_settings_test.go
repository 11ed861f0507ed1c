package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/profile/kubeprofile"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// devCommandFlags registers each dev command's settings on a bare command, as its constructor
// does.
var devCommandFlags = map[string]func(*cobra.Command) *devFlags{
	"up":     func(c *cobra.Command) *devFlags { f, _, _ := devUpFlags(c, &occdev.UpOptions{}); return f },
	"down":   func(c *cobra.Command) *devFlags { f, _ := devDownFlags(c); return f },
	"status": func(c *cobra.Command) *devFlags { f, _ := devStatusFlags(c); return f },
	"reload": func(c *cobra.Command) *devFlags { f, _, _ := devReloadFlags(c); return f },
	"logs":   func(c *cobra.Command) *devFlags { f, _ := devLogsFlags(c); return f },
}

// envVariable is the shape of every variable a dev setting is read from.
var envVariable = regexp.MustCompile(`^(OCC|OPENCLAW)_[A-Z0-9_]+$`)

// A maintainer adds a setting to a dev command: it is registered with its flag, shorthand and
// usage exactly as the table describes it, it has a variable (its own or OCC_<FLAG>), and up's
// own variables are all in its help; its flag wins over its variable, which wins over the
// default, and each fills the option field it is bound to.
func TestDevSettingsAreDescribedOnceAndResolveInOrder(t *testing.T) {
	isolate(t)
	up := newDevUpCommand(&Globals{v: viper.New()})
	for name, register := range devCommandFlags {
		for _, b := range register(&cobra.Command{Use: name}).binds {
			s := b.setting
			t.Run(name+"/"+s.flag+s.env, func(t *testing.T) {
				if !envVariable.MatchString(s.envOf()) {
					t.Errorf("variable %q of the setting is not an OCC_ or OPENCLAW_ variable", s.envOf())
				}
				if name == "up" && s.env != "" && !strings.Contains(up.Long+s.usage, s.env) {
					t.Errorf("neither dev up's help nor the flag's usage names %s", s.env)
				}
				if s.flag == "" {
					if s.env == "" || s.usage != "" {
						t.Errorf("a setting without a flag needs its own variable and no usage: %+v", s)
					}
				} else {
					cmd := &cobra.Command{Use: name}
					register(cmd)
					f := cmd.Flags().Lookup(s.flag)
					if f == nil || s.usage == "" || f.Usage != s.usage || f.Shorthand != s.short {
						t.Errorf("flag --%s is not registered as described (usage %q, shorthand %q): %+v", s.flag, s.usage, s.short, f)
					}
				}
				for _, k := range []string{s.env, envName(s.flag)} {
					if k != "" && k != "OCC_" {
						t.Setenv(k, "")
						os.Unsetenv(k)
					}
				}
				envValue, flagValue, envWant, flagWant := samples(b)
				if got, from := resolveOne(t, name, b, nil); !from.isDefault() || got != defaultOf(t, name, b) {
					t.Errorf("unset: %v from %q, want the default %v", got, from.from, defaultOf(t, name, b))
				}
				t.Setenv(s.envOf(), envValue)
				if got, from := resolveOne(t, name, b, nil); got != envWant || from.from != s.envOf() {
					t.Errorf("%s=%s: %v from %q, want %v from the variable", s.envOf(), envValue, got, from.from, envWant)
				}
				if s.flag == "" {
					return
				}
				if got, from := resolveOne(t, name, b, []string{"--" + s.flag + "=" + flagValue}); got != flagWant || from.from != "--"+s.flag {
					t.Errorf("--%s=%s beside %s=%s: %v from %q, want %v from the flag", s.flag, flagValue, s.envOf(), envValue, got, from.from, flagWant)
				}
			})
		}
	}
}

// samples are a value for the variable and another for the flag of b's kind, and the values
// its field takes from them.
func samples(b binding) (envValue, flagValue string, envWant, flagWant any) {
	switch b.field.(type) {
	case *bool:
		return "true", "false", true, false
	case *int:
		return "7", "9", 7, 9
	case *time.Duration:
		// The startup timeout's variable counts seconds; its flag takes a duration.
		return "7", "9s", 7 * time.Second, 9 * time.Second
	}
	return "from-the-variable", "from-the-flag", "from-the-variable", "from-the-flag"
}

// defaultOf is the value b's field takes when nothing sets it: its flag's default (tail's -1),
// else the zero value that selects occ's default.
func defaultOf(t *testing.T, command string, b binding) any {
	t.Helper()
	zero := reflect.Zero(reflect.TypeOf(b.field).Elem()).Interface()
	if _, ok := b.field.(*int); !ok || b.setting.flag == "" {
		return zero
	}
	cmd := &cobra.Command{Use: command}
	devCommandFlags[command](cmd)
	n, err := strconv.Atoi(cmd.Flags().Lookup(b.setting.flag).DefValue)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// resolveOne registers command's settings on a fresh command, parses args and resolves them,
// returning the field b is bound to and where its value came from.
func resolveOne(t *testing.T, command string, b binding, args []string) (any, setting) {
	t.Helper()
	cmd := &cobra.Command{Use: command}
	flags := devCommandFlags[command](cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := flags.resolve(&Globals{v: viper.New()}); err != nil {
		t.Fatalf("resolve %v: %v", args, err)
	}
	for _, got := range flags.binds {
		if got.setting == b.setting {
			return reflect.ValueOf(got.field).Elem().Interface(), *got.resolved
		}
	}
	t.Fatalf("%s has no setting %+v", command, b.setting)
	return nil, setting{}
}

// An engineer gives a ranged dev setting a value outside its range, or an explicit 0 (which
// the options read as "the default"), by flag or by variable: each is the one bad-setting
// error, naming the setting, the value, the rule and the fix, and is a usage error (exit 2).
func TestBadRangedDevSettingsAreOptionErrors(t *testing.T) {
	dir := isolate(t)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	for _, k := range []string{k3d.EnvAPIPort, k3d.EnvDiskThresholdPercent, settingStartupTimeout.env, kubeprofile.EnvDevPort,
		occdev.EnvClusterProvider, occdev.EnvControlPlane, settingRepository.env, settingStateDir.env} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	checkout := ocebed.Checkout(t, strings.Repeat("d", 40))
	// The Kubernetes-only profile's port is checked with the profile, on a cluster of the
	// kubeconfig (no engine is located).
	kubeProfile := []string{"--cluster-provider", "existing", "--control-plane", "kubernetes", "--repository", checkout}
	composeProfile := []string{"--cluster-provider", "k3d", "--control-plane", "compose", "--repository", checkout}
	for _, c := range []struct {
		name      string
		env       map[string]string
		args      []string
		key, val  string
		ruleWords string
	}{
		{"API port above the range", nil, []string{"--api-port", "70000"}, "--api-port", "70000", "between 1 and 65535"},
		{"API port below the range", map[string]string{k3d.EnvAPIPort: "-1"}, nil, k3d.EnvAPIPort, "-1", "between 1 and 65535"},
		{"API port 0", nil, []string{"--api-port", "0"}, "--api-port", "0", "out of range"},
		{"API port 0 from the environment", map[string]string{k3d.EnvAPIPort: "0"}, nil, k3d.EnvAPIPort, "0", "out of range"},
		{"disk threshold above the range", nil, []string{"--disk-threshold-percent", "21"}, "--disk-threshold-percent", "21", "between 1 and 20"},
		{"disk threshold below the range", map[string]string{k3d.EnvDiskThresholdPercent: "-3"}, nil, k3d.EnvDiskThresholdPercent, "-3", "between 1 and 20"},
		{"disk threshold 0", nil, []string{"--disk-threshold-percent", "0"}, "--disk-threshold-percent", "0", "out of range"},
		{"startup timeout above the range", nil, []string{"--startup-timeout", "25h"}, "--startup-timeout", "25h0m0s", "between 1s and 24h"},
		{"startup timeout below the range", nil, []string{"--startup-timeout", "10ms"}, "--startup-timeout", "10ms", "between 1s and 24h"},
		{"startup timeout above the range in seconds", map[string]string{settingStartupTimeout.env: "86401"}, nil, settingStartupTimeout.env, "24h0m1s", "between 1s and 24h"},
		{"startup timeout 0", nil, []string{"--startup-timeout", "0s"}, "--startup-timeout", "0s", "out of range"},
		{"startup timeout 0 seconds", map[string]string{settingStartupTimeout.env: "0"}, nil, settingStartupTimeout.env, "0", "out of range"},
		{"development port above the range", map[string]string{kubeprofile.EnvDevPort: "65536"}, kubeProfile, kubeprofile.EnvDevPort, "65536", "between 1 and 65535"},
		{"development port below the range", map[string]string{kubeprofile.EnvDevPort: "-80"}, kubeProfile, kubeprofile.EnvDevPort, "-80", "between 1 and 65535"},
		{"development port 0", map[string]string{kubeprofile.EnvDevPort: "0"}, kubeProfile, kubeprofile.EnvDevPort, "0", "out of range"},
		// The Compose profile applies the same rule, rather than leaving it to Compose.
		{"development port above the range in the Compose profile", map[string]string{kubeprofile.EnvDevPort: "65536"}, composeProfile, kubeprofile.EnvDevPort, "65536", "between 1 and 65535"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cmd := &cobra.Command{Use: "up"}
			opts := &occdev.UpOptions{}
			flags, _, _ := devUpFlags(cmd, opts)
			args := append([]string{"--state-dir", filepath.Join(dir, "state")}, c.args...)
			if err := cmd.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			err := flags.resolve(&Globals{v: viper.New()})
			if err == nil {
				opts.OCCCommand = "occ"
				_, err = occdev.PlanUp(context.Background(), *opts)
			}
			var bad *option.Error
			switch {
			case !errors.As(err, &bad):
				t.Fatalf("%v (%T), want an *option.Error", err, err)
			case !strings.Contains(bad.Option, c.key) || bad.Value != c.val || !strings.Contains(bad.Rule+": "+bad.Fix, c.ruleWords) || bad.Rule == "" || bad.Fix == "":
				t.Errorf("%+v, want the key %q, the value %q, a rule and a fix saying %q", bad, c.key, c.val, c.ruleWords)
			case !isUsageError(err):
				t.Errorf("%v is not a usage error", err)
			}
		})
	}
	// reload applies the same rule to its startup timeout, before it reads the record.
	t.Run("reload's startup timeout above the range", func(t *testing.T) {
		cmd := &cobra.Command{Use: "reload"}
		flags, opts, _ := devReloadFlags(cmd)
		if err := cmd.ParseFlags([]string{"--state-dir", filepath.Join(dir, "none"), "--startup-timeout", "25h"}); err != nil {
			t.Fatal(err)
		}
		if err := flags.resolve(&Globals{v: viper.New()}); err != nil {
			t.Fatal(err)
		}
		_, err := occdev.PlanReload(*opts)
		var bad *option.Error
		if !errors.As(err, &bad) || !strings.Contains(bad.Option, "--startup-timeout") || bad.Value != "25h0m0s" || bad.Fix == "" {
			t.Errorf("%v (%T), want the option.Error of --startup-timeout", err, err)
		}
	})
}
