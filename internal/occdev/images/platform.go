package images

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Platform is an OS and CPU architecture in the spelling of image configs and OCI indexes
// (linux/amd64, linux/arm64, linux/arm/v7): engine.Platform.
type Platform = engine.Platform

// EnginePlatform is the platform of the containers the engine runs: docker info's OSType and
// Architecture, in the names images use (engine.Identity). name names the engine in the error
// ("Docker", "Podman"); empty means Docker.
func EnginePlatform(ctx context.Context, eng engine.Engine, name string) (Platform, error) {
	id, err := eng.Identify(ctx)
	if err != nil {
		return Platform{}, fmt.Errorf("read the %s engine's platform (docker info): %w", engineName(name), err)
	}
	return id.Platform, nil
}

// NormalisePlatform is normalisePlatform, for the entries of an index read elsewhere.
func NormalisePlatform(os, arch, variant string) Platform {
	return normalisePlatform(os, arch, variant)
}

// normalisePlatform maps the machine names engines report to the architecture names of images
// (engine.NormalisePlatform).
func normalisePlatform(os, arch, variant string) Platform {
	return engine.NormalisePlatform(os, arch, variant)
}

// compatible reports whether an image of platform img runs natively on engine. A 32-bit ARM
// variant counts only when both sides state it.
func compatible(img, platform Platform) bool {
	if img.OS != platform.OS || img.Architecture != platform.Architecture {
		return false
	}
	return img.Variant == "" || platform.Variant == "" || img.Variant == platform.Variant
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
