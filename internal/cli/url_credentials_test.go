package cli

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// urlCanary is the secret the URL-credential tests hide in every position of an endpoint.
const urlCanary = "CANARYq7x3tok"

// credentialURLs are gateway endpoints with the canary in every position a credential can take:
// userinfo, a query string, a fragment, and each of those percent-encoded.
func credentialURLs(canary string) []string {
	enc := url.QueryEscape(canary)
	return []string{
		"http://admin:" + canary + "@gw.example:8080",
		"http://gw.example:8080/?token=" + canary,
		"http://gw.example:8080?access_token=" + canary,
		"https://gw.example#token=" + canary,
		"http://gw.example:8080/#" + canary,
		"gw.example:8080?token=" + canary,
		"gw.example:8080#" + canary,
		"http://gw.example:8080/%3Ftoken%3D" + canary,
		"http://admin%3A" + canary + "%40gw.example:8080",
		"http://gw.example:8080/?token=" + enc + "&x=%23" + canary,
		"http://u:" + canary + "%40gw.example:8080",
	}
}

// noCanary fails when the canary, or its percent-encoded form, appears in what occ printed.
func noCanary(t *testing.T, what, canary string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		if strings.Contains(o, canary) || strings.Contains(o, url.QueryEscape(canary)) {
			t.Errorf("%s printed the credential:\n%s", what, o)
		}
	}
}

// An engineer pastes a gateway URL whose token sits in the query string, the fragment or a
// percent-encoded part: validate (table, JSON, YAML) refuses it and says where credentials
// belong without printing the token, and so do --gateway (which names the flag, not the
// Installation) and `occ dev up --gateway-endpoint`.
func TestURLCredentialsNeverPrinted(t *testing.T) {
	isolate(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	dev := "../../testdata/installation/dev.yaml"
	rev := "../../testdata/revisions/codex.yaml"
	for _, endpoint := range credentialURLs(urlCanary) {
		file := writeInstallationWithEndpoint(t, endpoint)
		for _, format := range []string{"table", "json", "yaml"} {
			code, out, errOut := redactionRun(t, "sandbox", "validate", file, "-o", format)
			if code != 1 {
				t.Errorf("validate -o %s of %s: exit %d, want 1\n%s%s", format, endpoint, code, out, errOut)
			}
			noCanary(t, "validate -o "+format+" of "+endpoint, urlCanary, out, errOut)
			if !strings.Contains(out+errOut, "bearerTokenFile") {
				t.Errorf("validate -o %s of %s does not say where credentials belong:\n%s%s", format, endpoint, out, errOut)
			}
		}
		for _, args := range [][]string{
			{"sandbox", "ensure-namespace", "--installation", dev, "-n", "ns_a", "--kubeconfig", kubeconfig, "--gateway", endpoint},
			{"sandbox", "logs", "--installation", dev, "--revision", rev, "--gateway", endpoint},
		} {
			code, out, errOut := redactionRun(t, args...)
			noCanary(t, strings.Join(args[:2], " ")+" --gateway "+endpoint, urlCanary, out, errOut)
			if code != 2 || !strings.Contains(errOut, "--gateway") || strings.Contains(errOut, "openshell Backend openshell:") {
				t.Errorf("%s --gateway %s: exit %d, want 2 with an error naming --gateway, not the Backend:\n%s", args[1], endpoint, code, errOut)
			}
		}
		code, out, errOut := redactionRun(t, "dev", "up", "--dry-run", "--cluster-provider", "existing", "--kubeconfig", kubeconfig,
			"--state-dir", filepath.Join(t.TempDir(), "state"), "--gateway-endpoint", endpoint)
		noCanary(t, "dev up --gateway-endpoint "+endpoint, urlCanary, out, errOut)
		if code != 2 || !strings.Contains(errOut, "--gateway-endpoint") {
			t.Errorf("dev up --gateway-endpoint %s: exit %d, want 2 naming the flag:\n%s%s", endpoint, code, out, errOut)
		}
	}
}

// unreachableKubeconfig names a cluster nothing listens on, so a command gets as far as its
// gateway settings without a cluster.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
