package docker

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// A build context is the checkout minus what its .dockerignore excludes; a Dockerfile outside
// the checkout or missing is refused before the engine is called.
func TestBuildContextRefusesBadDockerfiles(t *testing.T) {
	dir := t.TempDir()
	for _, df := range []string{"", "/etc/Dockerfile", "../Dockerfile", "a/../Dockerfile", "Missing"} {
		if _, err := buildContext(dir, df); err == nil {
			t.Errorf("buildContext(%q) accepted", df)
		}
	}
	if _, err := buildContext("relative", "Dockerfile"); err == nil {
		t.Error("buildContext accepted a relative directory")
	}
}

// Build opens a BuildKit session, asks the engine for a BuildKit build of the request in that
// session (its Dockerfile, target, arguments, tag and network), sends the context minus what
// .dockerignore excludes, passes the build's output on, and returns the tagged image's ID.
func TestSeamBuildRequestShape(t *testing.T) {
	eng, s := connectSeam(t)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"Dockerfile":    "FROM scratch\n",
		".dockerignore": "secret.txt\n",
		"app.txt":       "app\n",
		"secret.txt":    "never sent\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var lines []string
	res, err := eng.Build(context.Background(), engine.BuildRequest{
		ContextDir: dir, Dockerfile: "Dockerfile", Target: "runtime", Args: map[string]string{"NODE_BASE_IMAGE": "node@sha256:aa"},
		Tag: "occ.local/built:1", NetworkMode: "none", Progress: func(l string) { lines = append(lines, l) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != "sha256:b1" {
		t.Errorf("Build = %+v", res)
	}
	if !slices.Equal(lines, []string{"Step 1/1 : FROM scratch"}) {
		t.Errorf("progress %q", lines)
	}
	s.mu.Lock()
	session, files := s.session, s.contextFiles
	s.mu.Unlock()
	id := session.Get("X-Docker-Expose-Session-Uuid")
	if id == "" || session.Get("Upgrade") != "h2c" || session.Get("X-Docker-Expose-Session-Name") != "occ" {
		t.Errorf("session headers %v", session)
	}
	slices.Sort(files)
	if !slices.Equal(files, []string{".dockerignore", "Dockerfile", "app.txt"}) {
		t.Errorf("the context held %q", files)
	}
	var asked string
	for _, r := range s.requests() {
		if strings.Contains(r, "/build?") {
			asked = r
		}
	}
	q, err := url.ParseQuery(asked[strings.Index(asked, "?")+1:])
	if err != nil {
		t.Fatal(err)
	}
	var args map[string]string
	_ = json.Unmarshal([]byte(q.Get("buildargs")), &args)
	if q.Get("version") != "2" || q.Get("session") != id || q.Get("dockerfile") != "Dockerfile" || q.Get("target") != "runtime" ||
		q.Get("t") != "occ.local/built:1" || q.Get("networkmode") != "none" || args["NODE_BASE_IMAGE"] != "node@sha256:aa" {
		t.Errorf("build asked %q", asked)
	}
	if _, err := eng.Build(context.Background(), engine.BuildRequest{ContextDir: dir, Dockerfile: "Dockerfile"}); err == nil ||
		err.Error() != "build  from Dockerfile: no tag given" {
		t.Errorf("a build without a tag: %v", err)
	}
}
