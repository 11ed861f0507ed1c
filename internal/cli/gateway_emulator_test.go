package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A new user looks for a way to try the driver without a gateway: `occ --help` lists the
// emulator, its own help says what it is for and what it is not, and it refuses to listen
// beyond loopback before serving anything.
func TestGatewayEmulatorCommand(t *testing.T) {
	isolate(t)
	code, out, errOut := run(t, "--help")
	if code != 0 || !strings.Contains(out, "gateway-emulator") {
		t.Fatalf("occ --help: exit %d, the emulator is not listed:\n%s%s", code, out, errOut)
	}
	code, out, _ = run(t, "gateway-emulator", "--help")
	for _, want := range []string{"without a real gateway", "It is NOT a gateway", "loopback", "--gateway 127.0.0.1:17670", "--admission-limit", "--token-file"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("gateway-emulator --help (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	var stdout, stderr bytes.Buffer
	code = Execute(context.Background(), []string{"gateway-emulator", "--listen", "0.0.0.0:0"}, strings.NewReader(""), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "not a loopback address") || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
