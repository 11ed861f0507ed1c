package locate

import (
	"encoding/json"
	"strings"
	"testing"
)

// An endpoint is written where a plan or a state shows it in its unix:/// form, and read back
// only when it is one; a zero endpoint is left out of a document that asks for omitzero.
func TestEndpointTextRoundTrip(t *testing.T) {
	type doc struct {
		Engine Endpoint `json:"engine,omitzero"`
	}
	data, err := json.Marshal(doc{Engine: Endpoint{Socket: "/run/user/1000/docker.sock"}})
	if err != nil || string(data) != `{"engine":"unix:///run/user/1000/docker.sock"}` {
		t.Fatalf("Marshal = %s, %v", data, err)
	}
	var back doc
	if err := json.Unmarshal(data, &back); err != nil || back.Engine.Socket != "/run/user/1000/docker.sock" {
		t.Fatalf("Unmarshal = %+v, %v", back, err)
	}
	if data, err := json.Marshal(doc{}); err != nil || string(data) != `{}` {
		t.Fatalf("Marshal of no engine = %s, %v", data, err)
	}
	err = json.Unmarshal([]byte(`{"engine":"tcp://user:canary-secret@host:2375"}`), &back)
	if err == nil || !strings.Contains(err.Error(), "is not a local unix socket") || strings.Contains(err.Error(), "canary-secret") {
		t.Fatalf("Unmarshal of a remote address = %v, want the rule without the password", err)
	}
}
