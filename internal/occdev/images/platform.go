package images

import (
	"context"
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Platform is an OS and CPU architecture in the spelling of image configs and OCI indexes
// (linux/amd64, linux/arm64, linux/arm/v7).
type Platform struct {
	OS           string
	Architecture string
	Variant      string
}

func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// EnginePlatform is the platform of the containers the engine runs: docker info's OSType and
// Architecture. The engine reports the kernel's machine name (x86_64, aarch64), which is
// normalised to the names images use. engine names the engine in the error ("Docker",
// "Podman"); empty means Docker.
func EnginePlatform(ctx context.Context, api docker.API, engine string) (Platform, error) {
	info, err := api.Info(ctx)
	if err != nil {
		return Platform{}, fmt.Errorf("read the %s engine's platform (docker info): %w", engineName(engine), err)
	}
	return normalisePlatform(info.OSType, info.Architecture, ""), nil
}

// NormalisePlatform is normalisePlatform, for the entries of an index read elsewhere.
func NormalisePlatform(os, arch, variant string) Platform {
	return normalisePlatform(os, arch, variant)
}

// normalisePlatform maps the machine names engines report to the architecture names of images:
// Docker's info carries uname's machine (x86_64, aarch64, armv7l), image configs carry Go's
// GOARCH names (amd64, arm64, arm + variant).
func normalisePlatform(os, arch, variant string) Platform {
	os, arch, variant = strings.ToLower(os), strings.ToLower(arch), strings.ToLower(variant)
	switch arch {
	case "x86_64", "x86-64", "amd64":
		arch = "amd64"
	case "aarch64", "arm64":
		// arm64 has one variant in practice (v8); images write it or leave it out.
		arch, variant = "arm64", ""
	case "armv7l", "armhf", "armv7":
		arch, variant = "arm", "v7"
	case "armv6l", "armel", "armv6":
		arch, variant = "arm", "v6"
	case "i386", "i686", "x86":
		arch = "386"
	}
	return Platform{OS: os, Architecture: arch, Variant: variant}
}

// compatible reports whether an image of platform img runs natively on engine. A 32-bit ARM
// variant counts only when both sides state it.
func compatible(img, engine Platform) bool {
	if img.OS != engine.OS || img.Architecture != engine.Architecture {
		return false
	}
	return img.Variant == "" || engine.Variant == "" || img.Variant == engine.Variant
}

// PlatformError is a local image of another platform than the engine's: the pin is a
// single-platform manifest of another architecture (a multi-platform index would have given
// the engine its own platform's image).
type PlatformError struct {
	Pin    pins.Image
	Image  Platform
	Engine Platform
	// EngineName is how the message names the engine ("Docker", "Podman"); empty means Docker.
	EngineName string
}

// engineName is name, or Docker when it is empty.
func engineName(name string) string {
	if name == "" {
		return "Docker"
	}
	return name
}

func (e *PlatformError) Error() string {
	return fmt.Sprintf("image %s is %s, but the %s engine runs %s containers: the pin is a single-platform %s image, which this engine cannot run; run `occ dev pins verify` to see the platforms each pin serves, and pin a multi-platform index that holds %s (the digest its tag serves, or `occ dev pins resolve`) in a pin file (--pin-file, OCC_DEVELOPMENT_PIN_FILE)",
		e.Pin.DigestReference(), e.Image, engineName(e.EngineName), e.Engine, e.Image, e.Engine)
}

// checkPlatform refuses a local image whose platform is not the engine's.
func checkPlatform(l Local, engine Platform, engineName string) error {
	if compatible(l.Platform, engine) {
		return nil
	}
	return &PlatformError{Pin: l.Pin, Image: l.Platform, Engine: engine, EngineName: engineName}
}
