package cli

import (
	"context"
	"strconv"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile"
)

// tunedProfile is a control plane of the CLI's tests with two settings of its own, declared in
// its package the way any profile declares them: a flavor (a flag with its variable) and a level
// only the environment gives. Its Plan keeps the options it was handed in seen.
type tunedProfile struct{ seen *tunedOptions }

// tunedOptions are the tuned profile's own settings.
type tunedOptions struct {
	Flavor string
	Level  int
}

const (
	tunedName      = "tuned"
	envTunedFlavor = "OCC_DEVELOPMENT_TUNED_FLAVOR"
	envTunedLevel  = "OCC_DEVELOPMENT_TUNED_LEVEL"
)

func (tunedProfile) Platform() profile.Platform {
	return profile.Platform{Gateway: platform.ControlPlaneKubernetes, Namespace: "tuned-system"}
}

func (tunedProfile) Settings() (any, []option.Setting) {
	o := &tunedOptions{}
	return o, []option.Setting{
		{Flag: "tuned-flavor", Env: envTunedFlavor, Usage: "the tuned profile's flavor: sweet or salty (env " + envTunedFlavor + ")", Field: &o.Flavor},
		{Env: envTunedLevel, Want: "a level between 1 and 9", Field: &o.Level},
	}
}

func (p tunedProfile) Plan(in profile.Input) (profile.Planned, error) {
	o, err := profile.SettingsOf[tunedOptions](in)
	if err != nil {
		return nil, err
	}
	if o.Flavor != "" && o.Flavor != "sweet" && o.Flavor != "salty" {
		return nil, &option.Error{Option: envTunedFlavor, Value: o.Flavor, Rule: "is not a flavor", Fix: "give sweet or salty, or unset " + envTunedFlavor}
	}
	if o.Level < 0 || o.Level > 9 {
		return nil, &option.Error{Option: envTunedLevel, Value: strconv.Itoa(o.Level), Rule: "must be between 1 and 9", Fix: "give a level between 1 and 9, or unset " + envTunedLevel}
	}
	*p.seen = o
	return tunedPlan{}, nil
}

// tunedPlan is the tuned profile decided: it adds nothing to the flow.
type tunedPlan struct{ profile.Base }

func (tunedPlan) ControlPlane() []profile.Step         { return nil }
func (tunedPlan) Summary(profile.Env) *profile.Summary { return nil }

// Someone adds a control plane with settings of its own and registers it: `occ dev up` takes its
// flag and variables like its own (the flag wins over its variable; a variable-only setting has
// no flag) and hands them to the profile's Plan without a line in the CLI; a bad value is
// refused with the settings table's usual error, named by where it came from.
func TestAProfilesOwnSettingsReachItsPlan(t *testing.T) {
	dir := isolateDev(t)
	for _, k := range []string{envTunedFlavor, envTunedLevel} {
		t.Setenv(k, "")
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want tunedOptions
		err  string
	}{
		{"nothing given", nil, nil, tunedOptions{}, ""},
		{"the flag beside both variables", map[string]string{envTunedFlavor: "sweet", envTunedLevel: "7"}, []string{"--tuned-flavor", "salty"}, tunedOptions{"salty", 7}, ""},
		{"the variables", map[string]string{envTunedFlavor: "sweet", envTunedLevel: "3"}, nil, tunedOptions{"sweet", 3}, ""},
		{"a level that is no number", map[string]string{envTunedLevel: "high"}, nil, tunedOptions{}, envTunedLevel + ` "high" is not a number: give a level between 1 and 9`},
		{"an explicit level 0", map[string]string{envTunedLevel: "0"}, nil, tunedOptions{}, envTunedLevel + ` "0" is out of range: give a level between 1 and 9`},
		{"a level the profile refuses", map[string]string{envTunedLevel: "12"}, nil, tunedOptions{}, envTunedLevel + ` "12" must be between 1 and 9: give a level between 1 and 9, or unset ` + envTunedLevel},
		{"a flavor the profile refuses, by flag", nil, []string{"--tuned-flavor", "sour"}, tunedOptions{}, `--tuned-flavor "sour" is not a flavor: give sweet or salty, or drop --tuned-flavor`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var seen tunedOptions
			opts := &occdev.UpOptions{OCCCommand: "occ"}
			opts.Seams().Profiles = map[string]profile.Profile{tunedName: tunedProfile{seen: &seen}}
			cmd := &cobra.Command{Use: "up"}
			flags, _, _ := devUpFlags(cmd, opts)
			if f := cmd.Flags().Lookup("tuned-flavor"); f == nil || f.Usage != "the tuned profile's flavor: sweet or salty (env "+envTunedFlavor+")" {
				t.Fatalf("--tuned-flavor is not registered as the profile describes it: %+v", f)
			}
			if err := cmd.ParseFlags(append([]string{"--state-dir", dir + "/state", "--control-plane", tunedName}, c.args...)); err != nil {
				t.Fatal(err)
			}
			err := flags.resolve(&Globals{v: viper.New()})
			if err == nil {
				_, err = occdev.PlanUp(context.Background(), *opts)
			}
			err = flags.attribute(err)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("plan: %v", err)
			case c.err != "" && (err == nil || err.Error() != c.err || !isUsageError(err)):
				t.Fatalf("plan: %v, want the usage error %q", err, c.err)
			case seen != c.want:
				t.Errorf("the profile's Plan saw %+v, want %+v", seen, c.want)
			}
		})
	}
}
