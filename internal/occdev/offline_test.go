package occdev

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/progress"
)

// A newcomer runs `occ dev up` without a network (a plane, a proxy that is not set): the first
// download fails. Its error says what to do, offline too: check the network and the proxy, pass
// the file as a local copy with the flag and variable that take it, or choose another pin set;
// and it shows the pinned URL without the token its query carries.
func TestAnUnreachableDownloadNamesTheOfflineFixes(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close() // nothing listens there now: the download is refused
	const canary = "CANARY-offline-7c1e"
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	set.OpenShell.SourceArchive.URL = "http://" + closed + "/openshell.tar.gz?token=" + canary
	set.AgentSandbox.Manifest.URL = "http://" + closed + "/manifest.yaml?token=" + canary
	r := &run{plan: &Plan{CacheDir: t.TempDir(), pins: set}}
	for _, tc := range []struct {
		what string
		step func(context.Context, *run, progress.Reporter) error
		want []string
	}{
		{"the source archive", fetchArchive, []string{"--openshell-archive FILE (" + EnvArchive + ") takes a local copy"}},
		{"the Agent Sandbox manifest", fetchAgentSandbox, []string{"--agent-sandbox-manifest FILE (" + EnvAgentSandboxManifest + ") takes a local copy"}},
	} {
		err := tc.step(context.Background(), r, progress.Reporter{})
		if err == nil {
			t.Fatalf("the download of %s from %s succeeded", tc.what, closed)
		}
		msg := err.Error()
		for _, want := range append(tc.want, "check the network and the proxy settings (HTTPS_PROXY", "--pin-file ("+EnvPinFile+") another pin set", "http://"+closed) {
			if !strings.Contains(msg, want) {
				t.Errorf("the failed download of %s says %q; it lacks %q", tc.what, msg, want)
			}
		}
		if strings.Contains(msg, canary) {
			t.Errorf("the failed download of %s shows the URL's token: %s", tc.what, msg)
		}
	}
}
