package profile

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A dry run's JSON read back by another program and written again keeps the profile's document
// byte for byte, and prints none of the table it cannot know.
func TestRawDocumentRoundTrips(t *testing.T) {
	in := `{"oce":{"checkout":"/src/oce","builds":["api"]}}`
	var v struct {
		OCE json.RawMessage `json:"oce"`
	}
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(struct {
		OCE Document `json:"oce"`
	}{RawDocument(v.OCE)})
	if err != nil || string(out) != in {
		t.Errorf("round trip = %s, %v; want %s", out, err, in)
	}
	var printed bytes.Buffer
	RawDocument(v.OCE).PrintPlan(&printed)
	if printed.Len() != 0 {
		t.Errorf("PrintPlan printed %q", printed.String())
	}
}
