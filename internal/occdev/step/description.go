package step

// Description is what a step would do, for --dry-run: what it creates, and a note for what it
// checks or uses without creating anything.
type Description struct {
	Creates []string `json:"creates"`
	Note    string   `json:"note,omitempty"`
}

// Creates describes a step by what it creates.
func Creates(items ...string) Description { return Description{Creates: items} }

// Note describes a step that creates nothing, by what it checks or uses.
func Note(text string) Description { return Description{Creates: []string{}, Note: text} }
