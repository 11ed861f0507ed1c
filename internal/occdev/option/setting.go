package option

import "fmt"

// Setting is one setting a part of `occ dev` declares of its own (a control-plane profile's,
// profile.Configurable; a cluster provider's, cluster.Registration.Settings), described the way the CLI's settings table describes every setting of
// `occ dev up`: its flag, the variable that gives it when the flag is not, its help, and the
// field of the part's options value it fills. The CLI registers it beside its own settings, with
// the same precedence, parsing and refusals (an *Error naming where the value came from), so a
// part with settings of its own needs no line in the CLI. It lives here, below the profiles and
// the cluster providers, so that either can declare settings in the one shape.
type Setting struct {
	// Flag and Short are the flag's name and shorthand; Flag is empty for a setting only the
	// environment gives.
	Flag, Short string
	// Env is the setting's own variable; empty when it has none, and then OCC_<FLAG> gives it.
	Env string
	// Usage is the flag's help text; empty for a setting only the environment gives.
	Usage string
	// Want is set for a whole number whose 0 stands for the part's default: it says what to
	// give, for a value that is no number and for an explicit 0, which would otherwise be read
	// as "the default" without a word.
	Want string
	// Field is the field of the options value the setting fills: a *string takes the text as
	// given, a *int a whole number (0 when nothing gives it), a *bool true or false. The range
	// of a value is the part's own rule, checked when it plans.
	Field any
}

// String is how messages name the setting: "--flag (ENV)", or the variable alone for a setting
// only the environment gives.
func (s Setting) String() string {
	if s.Flag == "" {
		return s.Env
	}
	return "--" + s.Flag + " (" + s.Env + ")"
}

// Own is a part's own options value of type T as the flow carries it, opaquely, beside the other
// parts': the value its declared settings fill (a *T), one a caller set (a T), or nil, for which
// it is the zero T (every default). part names the part ("the kubernetes profile") in the error
// for a value of any other type, a bug in occ.
func Own[T any](settings any, part string) (T, error) {
	var zero T
	switch s := settings.(type) {
	case nil:
		return zero, nil
	case T:
		return s, nil
	case *T:
		if s == nil {
			return zero, nil
		}
		return *s, nil
	}
	return zero, fmt.Errorf("the settings of %s are a %T, not a %T (a bug in occ)", part, settings, zero)
}
