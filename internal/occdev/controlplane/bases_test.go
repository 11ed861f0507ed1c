package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// tagResolver answers every tag with digest, or fails with err.
type tagResolver struct {
	digest string
	err    error
}

func (t tagResolver) ResolveTag(context.Context, string) (string, error) { return t.digest, t.err }

// A node image selected by tag resolves to its registry's digest, said through note; an engine
// whose API resolves no tag is refused naming the setting, the engine and how to give the
// digest, and another engine's failure names the setting and the image.
func TestResolveSelectedNamesTheSetting(t *testing.T) {
	img, err := pins.ParseImage("rancher/k3s:v1.33.1-k3s1")
	if err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("a", 64)
	var said []string
	got, err := ResolveSelected(context.Background(), tagResolver{digest: digest}, engine.Docker, img, "SETTING", func(s string) { said = append(said, s) })
	if err != nil || got.Digest != digest {
		t.Fatalf("resolved %s, %v", got, err)
	}
	if want := img.String() + " is a tag (from SETTING): resolved to " + digest + " at its registry; the cluster runs that digest"; len(said) != 1 || said[0] != want {
		t.Errorf("said %q, want %q", said, want)
	}
	failing := tagResolver{err: errors.New("no distribution endpoint")}
	_, err = ResolveSelected(context.Background(), failing, engine.Podman, img, "SETTING", func(string) {})
	if err == nil || !strings.HasPrefix(err.Error(), "SETTING "+img.String()+" is a tag, and Podman's API resolves no tag to a digest (") ||
		!strings.HasSuffix(err.Error(), "; give it by digest ("+img.String()+"@sha256:<digest>; `skopeo inspect docker://"+img.String()+"` prints the digest)") {
		t.Errorf("Podman: %v", err)
	}
	_, err = ResolveSelected(context.Background(), failing, engine.Docker, img, "SETTING", func(string) {})
	if err == nil || !strings.HasPrefix(err.Error(), "SETTING "+img.String()+": resolve the tag ") || !errors.Is(err, failing.err) {
		t.Errorf("Docker: %v", err)
	}
}
