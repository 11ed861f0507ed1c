// Package option holds the one error every layer of `occ dev` returns for a bad setting, so
// the CLI reports all of them the same way (a usage error, exit 2) whichever layer found it, how
// a layer names a setting in its messages (Setting), and the rule of the one setting `up` and
// `reload` share (the startup timeout).
package option

import "fmt"

// Error is a bad setting the user fixes on the command line or in the environment. Nothing
// has been created when it is returned.
type Error struct {
	// Option names the flag (and, where one exists, the environment variable).
	Option string
	// Value is the value given; it never holds a secret (callers redact URLs).
	Value string
	// Rule is what the value breaks.
	Rule string
	// Fix says what to do instead.
	Fix string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %q %s", e.Option, e.Value, e.Rule)
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// Setting names one setting in messages: its flag and the environment variable bound to it.
// The layer whose rule refuses a value, or whose failure another value would avoid, names the
// setting itself, so the wording of its errors is its own.
type Setting struct {
	Flag string
	Env  string
}

// String is how an error names the setting: "--flag (ENV)".
func (s Setting) String() string { return s.Flag + " (" + s.Env + ")" }
