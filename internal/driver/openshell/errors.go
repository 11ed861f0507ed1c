package openshell

import (
	"fmt"

	"github.com/openclaw/occ/internal/driver"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// unsupported is a SANDBOX_HARNESS_UNSUPPORTED refusal with the seed's sentence and an
// optional detail naming the offending value.
func unsupported(message string, detail error) *driver.Error {
	return &driver.Error{Code: driver.CodeHarnessUnsupported, Message: message, Err: detail}
}

// secretEnvironment is a SANDBOX_SECRET_ENVIRONMENT_UNSUPPORTED refusal. Its detail never
// contains an environment value.
func secretEnvironment(message string, detail error) *driver.Error {
	return &driver.Error{Code: driver.CodeSecretEnvironmentUnsupported, Message: message, Err: detail}
}

// plain is an uncoded driver error carrying a fixed user-facing sentence.
func plain(message string, detail error) *driver.Error {
	return &driver.Error{Message: message, Err: detail}
}
