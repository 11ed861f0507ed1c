package images

import (
	"errors"
	"strings"
	"testing"
)

// Engines report the kernel's machine name (x86_64 on Linux hosts, aarch64 in Docker Desktop on
// Apple Silicon), images the Go architecture names: both must meet on one spelling.
func TestNormalisePlatform(t *testing.T) {
	for _, c := range []struct{ os, arch, variant, want string }{
		{"linux", "x86_64", "", "linux/amd64"},
		{"linux", "amd64", "", "linux/amd64"},
		{"linux", "aarch64", "", "linux/arm64"},
		{"linux", "arm64", "v8", "linux/arm64"},
		{"Linux", "ARMV7L", "", "linux/arm/v7"},
		{"linux", "arm", "v7", "linux/arm/v7"},
		{"linux", "i686", "", "linux/386"},
		{"windows", "x86_64", "", "windows/amd64"},
		{"linux", "s390x", "", "linux/s390x"},
	} {
		if got := normalisePlatform(c.os, c.arch, c.variant).String(); got != c.want {
			t.Errorf("normalisePlatform(%q, %q, %q) = %s, want %s", c.os, c.arch, c.variant, got, c.want)
		}
	}
}

// An arm64 image on an amd64 engine (the single-platform pin) is refused naming both platforms
// and the fix; an arm64/v8 image on an aarch64 engine, and a 32-bit ARM image whose engine states
// no variant, are accepted.
func TestCheckPlatform(t *testing.T) {
	amd := normalisePlatform("linux", "x86_64", "")
	arm := normalisePlatform("linux", "aarch64", "")
	pin := mustPin(t, "ghcr.io/k3d-io/k3d-tools:5.9.0@"+digestA)
	err := checkPlatform(Local{Pin: pin, Platform: normalisePlatform("linux", "arm64", "v8")}, amd, "")
	var pe *PlatformError
	if !errors.As(err, &pe) {
		t.Fatalf("arm64 image on an amd64 engine: %v", err)
	}
	for _, want := range []string{"ghcr.io/k3d-io/k3d-tools@" + digestA, "is linux/arm64", "runs linux/amd64 containers", "single-platform linux/arm64", "occ dev pins verify", "multi-platform index that holds linux/amd64", "OCC_DEVELOPMENT_PIN_FILE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
	if !strings.Contains(err.Error(), "but the Docker engine runs linux/amd64") {
		t.Errorf("refusal without an engine name does not name Docker: %v", err)
	}
	if err := checkPlatform(Local{Pin: pin, Platform: normalisePlatform("linux", "arm64", "v8")}, amd, "Podman"); err == nil || !strings.Contains(err.Error(), "but the Podman engine runs linux/amd64") {
		t.Errorf("refusal on Podman: %v", err)
	}
	if err := checkPlatform(Local{Pin: pin, Platform: normalisePlatform("linux", "arm64", "v8")}, arm, ""); err != nil {
		t.Errorf("arm64/v8 image on an aarch64 engine: %v", err)
	}
	if err := checkPlatform(Local{Pin: pin, Platform: normalisePlatform("linux", "arm", "v7")}, Platform{OS: "linux", Architecture: "arm"}, ""); err != nil {
		t.Errorf("arm/v7 image on an arm engine without a variant: %v", err)
	}
	if err := checkPlatform(Local{Pin: pin, Platform: normalisePlatform("linux", "arm", "v6")}, normalisePlatform("linux", "armv7l", ""), ""); err == nil {
		t.Errorf("arm/v6 image on an armv7 engine was accepted")
	}
	if err := checkPlatform(Local{Pin: pin, Platform: normalisePlatform("windows", "amd64", "")}, amd, ""); err == nil {
		t.Errorf("a windows image on a linux engine was accepted")
	}
}
