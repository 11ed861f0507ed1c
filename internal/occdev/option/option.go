// Package option holds the one error every layer of `occ dev` returns for a bad setting, so
// the CLI reports all of them the same way (a usage error, exit 2) whichever layer found it, the one
// shape of a setting (Setting: how a part declares one and how messages name it), and the rule of the one setting `up` and
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
