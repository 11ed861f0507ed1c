package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/option"
)

// isolateEnvironments points the default state location at a fresh directory and clears the
// variables that select an environment.
func isolateEnvironments(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", home)
	for _, k := range []string{EnvDirectory, EnvEnvironment} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	return home
}

// An engineer names a second environment: a DNS-label name is taken, anything else is refused
// with the setting, the value, the rule and the fix.
func TestEnvironmentNameRule(t *testing.T) {
	for _, ok := range []string{"default", "a", "feature-x", "pr-1234", strings.Repeat("a", MaxEnvironmentLength)} {
		if err := CheckEnvironment(ok); err != nil {
			t.Errorf("CheckEnvironment(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "Feature", "1st", "-x", "x-", "a_b", "a.b", "../x", "x/y", strings.Repeat("a", MaxEnvironmentLength+1)} {
		err := CheckEnvironment(bad)
		var oe *option.Error
		if !errors.As(err, &oe) {
			t.Fatalf("CheckEnvironment(%q) = %v, want an *option.Error", bad, err)
		}
		if oe.Option != "--name ("+EnvEnvironment+")" || oe.Value != bad || !strings.Contains(oe.Rule, "lower-case letters") || !strings.Contains(oe.Fix, "feature-x") {
			t.Errorf("CheckEnvironment(%q) = %+v: want the setting, the value, the rule and a fix", bad, oe)
		}
	}
}

// Existing state keeps loading: the default environment's directory is the one every earlier
// occ used, and another environment's directory is a sibling tree that is never inside it (down
// of the default environment removes its directory recursively).
func TestEnvironmentDirectories(t *testing.T) {
	home := isolateEnvironments(t)
	def, err := EnvironmentDir(DefaultEnvironment)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "occ", "dev"); def != want {
		t.Fatalf("default environment's directory = %s, want today's %s", def, want)
	}
	other, err := EnvironmentDir("feature-x")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "occ", "dev-envs", "feature-x"); other != want {
		t.Fatalf("feature-x's directory = %s, want %s", other, want)
	}
	if strings.HasPrefix(other, def+string(filepath.Separator)) || strings.HasPrefix(def, other+string(filepath.Separator)) {
		t.Fatalf("%s and %s nest: one environment's down would remove the other's record", def, other)
	}
}

// The environment is chosen as kubectl users expect: --name over OCC_DEVELOPMENT_ENVIRONMENT over
// the default; an explicit state directory (flag, then its variable) wins over the name's
// directory, and the name then only labels it.
func TestLocatePrecedence(t *testing.T) {
	home := isolateEnvironments(t)
	cases := []struct {
		name, flagDir, flagName, envDir, envName string
		wantName, wantDir                        string
		named, dirGiven                          bool
	}{
		{name: "nothing given", wantName: "default", wantDir: filepath.Join(home, "occ", "dev")},
		{name: "variable", envName: "b", wantName: "b", wantDir: filepath.Join(home, "occ", "dev-envs", "b"), named: true},
		{name: "flag over variable", flagName: "a", envName: "b", wantName: "a", wantDir: filepath.Join(home, "occ", "dev-envs", "a"), named: true},
		{name: "state dir variable over name", flagName: "a", envDir: "/srv/x", wantName: "a", wantDir: "/srv/x", named: true, dirGiven: true},
		{name: "state dir flag over its variable", flagDir: "/srv/y", envDir: "/srv/x", wantName: "default", wantDir: "/srv/y", dirGiven: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvDirectory, c.envDir)
			t.Setenv(EnvEnvironment, c.envName)
			loc, err := Locate(c.flagDir, c.flagName)
			if err != nil {
				t.Fatal(err)
			}
			if loc.Name != c.wantName || loc.Dir != c.wantDir || loc.Named != c.named || loc.DirGiven != c.dirGiven {
				t.Fatalf("Locate = %+v, want name %s dir %s named %v dirGiven %v", loc, c.wantName, c.wantDir, c.named, c.dirGiven)
			}
		})
	}
	t.Setenv(EnvEnvironment, "Bad")
	if _, err := Locate("", ""); err == nil || !strings.Contains(err.Error(), `"Bad"`) {
		t.Fatalf("a bad name in the variable: Locate = %v, want the name refused", err)
	}
}

// `occ dev up --state-dir ~` or `--state-dir /`: up refuses a directory it could never delete
// safely before any other work; a fresh directory under the state home is located as Locate does.
func TestLocateNewAppliesTheLocationRules(t *testing.T) {
	home := isolateEnvironments(t)
	if loc, err := LocateNew("", "a"); err != nil || loc.Dir != filepath.Join(home, "occ", "dev-envs", "a") {
		t.Errorf("LocateNew of a named environment = %+v, %v", loc, err)
	}
	var unsafe *UnsafeError
	if _, err := LocateNew("/", ""); !errors.As(err, &unsafe) {
		t.Errorf("LocateNew(/) = %v, want it refused as unsafe", err)
	}
}

// `down --state-dir X --name a` where X holds environment b must not remove b: a name given beside
// an explicit state directory must be the recorded one; without a name the directory is enough,
// and a record from before names is the default environment's.
func TestRecordedNameBesideStateDir(t *testing.T) {
	isolateEnvironments(t)
	dir := filepath.Join(t.TempDir(), "b-state")
	d, err := Create(dir, State{Environment: "b", Profile: "kubernetes", Cluster: Cluster{Provider: "existing"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "b"} {
		loc, err := Locate(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := loc.Read(); err != nil {
			t.Fatalf("name %q: Read = %v, want the record", name, err)
		}
	}
	loc, err := Locate(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	var oe *option.Error
	if _, err := loc.Open(); !errors.As(err, &oe) || !strings.Contains(oe.Rule, `records "b"`) || !strings.Contains(oe.Fix, "--name b") {
		t.Fatalf("Open with another name = %v, want a refusal naming the recorded environment", err)
	}
	// The refusal released the lock: the right name opens it now.
	if loc, err = Locate(dir, "b"); err != nil {
		t.Fatal(err)
	}
	d, err = loc.Open()
	if err != nil {
		t.Fatalf("Open after a refused name: %v", err)
	}
	_ = d.Close()
	if got := (State{}).EnvironmentName(); got != DefaultEnvironment {
		t.Fatalf("a record without a name is environment %q, want %q", got, DefaultEnvironment)
	}
}

// `occ dev list` finds the default environment and those beside it, and nothing else that
// happens to be there (a bundle, a directory occ did not make, a name occ would refuse).
func TestEnvironmentsFound(t *testing.T) {
	home := isolateEnvironments(t)
	if got, err := Environments(); err != nil || len(got) != 0 {
		t.Fatalf("fresh machine: Environments = %v, %v; want none", got, err)
	}
	for _, name := range []string{"zeta", "default", "alpha"} {
		dir, err := EnvironmentDir(name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Create(dir, State{Environment: name, Profile: "kubernetes", Cluster: Cluster{Provider: "existing"}})
		if err != nil {
			t.Fatal(err)
		}
		_ = d.Close()
	}
	envs := filepath.Join(home, "occ", "dev-envs")
	for _, stray := range []string{"not-occs", "Bad_Name"} {
		if err := os.MkdirAll(filepath.Join(envs, stray), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(envs, "alpha-diagnose-x.tar.gz"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Environments()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "default,alpha,zeta" {
		t.Fatalf("Environments = %v, want default, alpha, zeta", names)
	}
	if got[1].Dir != filepath.Join(envs, "alpha") {
		t.Fatalf("alpha's directory = %s", got[1].Dir)
	}
}
