package docker

import (
	"errors"
	"strings"
	"testing"
)

func TestParseEndpointRoundTripAndRefusals(t *testing.T) {
	ep, err := ParseEndpoint("unix:///var/run/docker.sock", "state")
	if err != nil || ep.Socket != "/var/run/docker.sock" {
		t.Fatalf("ParseEndpoint = %+v, %v", ep, err)
	}
	back, err := ParseEndpoint(ep.String(), "state")
	if err != nil || back != ep {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
	for _, raw := range []string{"", "tcp://127.0.0.1:2375", "unix://", "unix:///s?x=1", "http://localhost", "/var/run/docker.sock", "unix://user:secret@/x"} {
		_, err := ParseEndpoint(raw, "state")
		var ee *EndpointError
		if !errors.As(err, &ee) {
			t.Errorf("ParseEndpoint(%q) = %v, want an EndpointError", raw, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseEndpoint(%q) error shows a password: %v", raw, err)
		}
		if !strings.Contains(err.Error(), "from state") {
			t.Errorf("ParseEndpoint(%q) error %q does not name its source", raw, err)
		}
	}
}
