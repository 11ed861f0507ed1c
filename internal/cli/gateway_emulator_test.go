package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The emulator is a development tool: it stays out of `occ --help` and refuses to listen
// beyond loopback before serving anything.
func TestGatewayEmulatorCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Execute(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), "gateway-emulator") {
		t.Fatal("the hidden command is listed in --help")
	}
	out.Reset()
	errOut.Reset()
	code := Execute(context.Background(), []string{"gateway-emulator", "--listen", "0.0.0.0:0"}, strings.NewReader(""), &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "not a loopback address") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}
