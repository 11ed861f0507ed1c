package option

import "time"

// EnvStartupTimeoutSeconds sets the startup timeout of `occ dev up` and `occ dev reload` in whole
// seconds (the flag takes a duration).
const EnvStartupTimeoutSeconds = "OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS"

const (
	defaultStartupTimeout = 600 * time.Second
	maxStartupTimeout     = 86400 * time.Second
)

// StartupTimeout applies the one rule of the startup timeout, for `up` and `reload` alike: 0
// is the default, anything else lies between 1s and 24h.
func StartupTimeout(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return defaultStartupTimeout, nil
	case d < time.Second || d > maxStartupTimeout:
		return 0, &Error{Option: "--startup-timeout (" + EnvStartupTimeoutSeconds + ")", Value: d.String(),
			Rule: "must be between 1s and 24h", Fix: "pass a duration such as 10m"}
	}
	return d, nil
}
