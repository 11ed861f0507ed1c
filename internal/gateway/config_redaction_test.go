package gateway

import (
	"strings"
	"testing"
)

// An operator pastes a gateway URL with a password into --gateway or the Installation; every
// refusal names the endpoint without ever printing the password back.
func TestEndpointErrorsNeverEchoUserinfo(t *testing.T) {
	const canary = "CANARY-gateway-pass-7f3e"
	for _, endpoint := range []string{
		"http://admin:" + canary + "@gateway:30051",
		"https://admin:" + canary + "@gateway:30051/path",
		"admin:" + canary + "@gateway:30051",
		"http://admin:" + canary + "@gate way:30051",
		"ftp://admin:" + canary + "@gateway:30051",
	} {
		err := Config{Endpoint: endpoint, InsecureTransport: InsecureTransportNetworkPolicy}.Validate()
		if err == nil {
			t.Fatalf("endpoint with credentials %q was accepted", endpoint)
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("error for %q echoes the password: %v", endpoint, err)
		}
		if !strings.Contains(err.Error(), "gateway") {
			t.Errorf("error for %q does not name the endpoint: %v", endpoint, err)
		}
	}
}
