package occdev

// Seams returns the test seams of o for a test to set (AfterStep).
func (o *ReloadOptions) Seams() *deps { return &o.deps }

// Seams returns the test seams of o for a test to set (Profiles).
func (o *StatusOptions) Seams() *deps { return &o.deps }
