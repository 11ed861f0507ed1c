package profile

import "github.com/openclaw/occ/internal/occdev/option"

// Configurable is a Profile with settings of its own (option.Setting). The flow hands the
// options value back to the profile's Plan as Input.Settings, where SettingsOf reads it.
type Configurable interface {
	Profile
	// Settings returns a fresh options value of the profile's own type, as a pointer, and its
	// settings, each bound to one of that value's fields.
	Settings() (options any, settings []option.Setting)
}
