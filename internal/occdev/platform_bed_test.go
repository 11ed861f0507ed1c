package occdev_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/progress"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// A pin file names the Gateway as a single-platform image of another architecture than the
// engine's (a linux/arm64 manifest on the bed's linux/amd64 engine; on a Mac it would be an
// amd64-only digest): `up` refuses it at the Gateway's pull, naming both platforms and
// `occ dev pins verify`, before any image is imported into the cluster, and the rollback leaves
// nothing — no state, no cluster, no staging tag, no pulled image.
func TestK3dRefusesAPinOfAnotherPlatform(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := newK3dBed(t, nil)
	b.forgetProducts(t)
	engine, err := images.EnginePlatform(ctx, b.engine.Verbs(), b.engine.Name())
	if err != nil {
		t.Fatal(err)
	}
	other := "arm64"
	if engine.Architecture == "arm64" {
		other = "amd64"
	}
	spec, err := dockerbed.ProductImage(dockerbed.RoleGateway)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Registry.PushForPlatform(ctx, spec, "linux", other)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Engine.Forget(p.Ref) })
	key, err := spec.Key()
	if err != nil {
		t.Fatal(err)
	}
	set := *b.set
	set.OpenShell.Images.Gateway = parsePin(t, p.Repo+":"+key+"@"+p.Digest)
	opts := b.options(t)
	opts.PinFile = b.writePins(&set)
	var mu sync.Mutex
	var began, succeeded []string
	opts.Progress = func(ev progress.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ev.Kind == progress.Begin:
			began = append(began, ev.Step)
		case ev.Kind == progress.End && ev.Err == nil:
			succeeded = append(succeeded, ev.Step)
		}
	}

	err = upFails(t, b, opts, "Pull the OpenShell Gateway image", p.Ref+" is linux/"+other,
		"the Docker engine runs "+engine.String()+" containers", "occ dev pins verify", "rolled back")
	t.Logf("up: %v", err)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(began, "Pull the OpenShell Gateway image") {
		t.Errorf("the Gateway's pull never began: %v", began)
	}
	// The other images' imports wait for the cluster beside the pulls, and the platform waits for
	// the cluster too; none may have imported, verified or installed anything once the refusal
	// cancelled them. (The check of the repo digests of the images pulled before the group reads
	// the engine only, so it may finish before the refusal.)
	for _, s := range succeeded {
		if strings.HasPrefix(s, "Import the ") || strings.HasPrefix(s, "Verify the ") || strings.HasPrefix(s, "Install the ") {
			t.Errorf("step %q completed after the refusal", s)
		}
	}
	if id := b.imageID(t, p.Ref); id != "" {
		t.Errorf("the refused image %s is still in the engine (%s)", p.Ref, id)
	}
}
