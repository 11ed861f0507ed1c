package installation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An operator sizes native OpenClaw's retained session workers: every whole number from 1 to
// 1024 is kept exactly, an omitted key means eight, and zero, 1025, a quoted "8" or -1 is
// refused naming the key, the value and the range.
func TestNativeOpenClawSessionCapacity(t *testing.T) {
	dev, err := os.ReadFile(filepath.Join(fixtureDir, "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := Parse(dev)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.NativeOpenClawSessionCapacity(); got != 8 {
		t.Errorf("omitted capacity = %d, want the default 8", got)
	}
	with := func(v string) []byte {
		return []byte(strings.Replace(string(dev), "        gatewayStorageClassName: local-path\n",
			"        gatewayStorageClassName: local-path\n        nativeOpenClawSessionCapacity: "+v+"\n", 1))
	}
	for v, want := range map[string]int{"1": 1, "2": 2, "1024": 1024} {
		in, err := Parse(with(v))
		if err != nil {
			t.Errorf("capacity %s refused: %v", v, err)
			continue
		}
		if got := in.NativeOpenClawSessionCapacity(); got != want {
			t.Errorf("capacity %s = %d", v, got)
		}
	}
	const path = "drivers.compute.configuration.runtime.nativeOpenClawSessionCapacity"
	for _, v := range []string{"0", "1025", `"8"`, "-1", "1.5", "99999999999999999999", "[8]"} {
		_, err := Parse(with(v))
		if err == nil {
			t.Errorf("capacity %s accepted", v)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, path) || !strings.Contains(msg, "accepts 1 through 1024") {
			t.Errorf("capacity %s: the problem does not name %s and the range:\n%s", v, path, msg)
		}
	}
}
