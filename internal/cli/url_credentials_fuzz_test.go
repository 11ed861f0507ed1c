package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// credentialEndpoint places canary in one of the positions a credential takes in a gateway URL
// (userinfo, query string, fragment, and each of them percent-encoded), around the host, port
// and key the fuzzer chose.
func credentialEndpoint(pos uint8, host, port, key, canary string) string {
	enc := url.QueryEscape(canary)
	switch pos % 10 {
	case 0:
		return "http://" + key + ":" + canary + "@" + host + ":" + port
	case 1:
		return "https://" + host + ":" + port + "/?" + key + "=" + canary
	case 2:
		return "http://" + host + ":" + port + "#" + key + "=" + canary
	case 3:
		return "http://" + host + ":" + port + "/%3F" + key + "%3D" + canary
	case 4:
		return "http://" + key + "%3A" + canary + "%40" + host + ":" + port
	case 5:
		return "http://" + host + ":" + port + "?" + key + "=" + enc
	case 6:
		return host + ":" + port + "?" + key + "=" + canary
	case 7:
		return key + ":" + canary + "@" + host + ":" + port
	case 8:
		return key + ":" + canary + "%40" + host + ":" + port
	default:
		return "http://" + host + ":" + port + "/%23" + enc
	}
}

// FuzzURLCredentialsNeverShown puts a canary in every credential position of a URL and runs
// every command that shows such a URL: validate in each output format (table, JSON, YAML),
// --gateway, `occ dev up --gateway-endpoint`; the pinned archive and Agent Sandbox manifest URLs
// in `occ dev pins show` (each format) and in the dry run of `occ dev up`; an engine address in
// DOCKER_HOST and CONTAINER_HOST; and the URL fields of a state file (the Gateway endpoint, the
// API server, the engine endpoint) in `occ dev status` (each format). Neither the canary nor its
// percent-encoded form may ever appear on stdout or stderr.
func FuzzURLCredentialsNeverShown(f *testing.F) {
	for i := range 10 {
		f.Add(uint8(i), "gw.example", "8080", "token")
	}
	f.Add(uint8(0), "gw?x", "80", "a/b")
	f.Add(uint8(4), "h", "1", "k/")
	f.Add(uint8(7), "://", "@", "#")
	dev, err := os.ReadFile("../../testdata/installation/dev.yaml")
	if err != nil {
		f.Fatal(err)
	}
	const from = "endpoint: http://k3d-occ-dev-server-0:30051"
	dir := f.TempDir()
	f.Setenv("XDG_CONFIG_HOME", dir)
	f.Setenv("OCC_OUTPUT", "")
	os.Unsetenv("OCC_OUTPUT")
	f.Setenv("OCC_DEVELOPMENT_CLUSTER_PROVIDER", "existing")
	kubeconfig := dir + "/kubeconfig"
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		f.Fatal(err)
	}
	set, err := pins.Default()
	if err != nil {
		f.Fatal(err)
	}
	stateDir := dir + "/recorded"
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(stateDir+"/"+state.MarkerName, []byte(state.MarkerContent), 0o600); err != nil {
		f.Fatal(err)
	}
	exec := func(stdin string, args ...string) string {
		var out, errOut bytes.Buffer
		Execute(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
		return out.String() + errOut.String()
	}
	f.Fuzz(func(t *testing.T, pos uint8, host, port, key string) {
		const canary = "CANARYf5u2zz"
		if strings.Contains(strings.ToUpper(host+port+key), "CANARY") {
			return
		}
		endpoint := credentialEndpoint(pos, host, port, key, canary)
		quoted, _ := json.Marshal(endpoint)
		inst := strings.Replace(string(dev), from, "endpoint: "+string(quoted), 1)
		check := func(what, out string) {
			if strings.Contains(out, canary) || strings.Contains(out, url.QueryEscape(canary)) {
				t.Fatalf("%s with endpoint %q printed the credential:\n%s", what, endpoint, out)
			}
		}
		for _, format := range []string{"table", "json", "yaml"} {
			check("validate -o "+format, exec(inst, "sandbox", "validate", "-", "-o", format))
		}
		check("logs --gateway", exec("", "sandbox", "logs", "--installation", "../../testdata/installation/dev.yaml",
			"--revision", "../../testdata/revisions/codex.yaml", "--gateway", endpoint, "-o", "json"))
		check("dev up --gateway-endpoint", exec("", "dev", "up", "--dry-run", "--kubeconfig", kubeconfig,
			"--state-dir", dir+"/state", "--gateway-endpoint", endpoint, "-o", "yaml"))

		// The pinned artifacts' URLs.
		withURL := *set
		withURL.OpenShell.SourceArchive.URL = endpoint
		withURL.AgentSandbox.Manifest.URL = endpoint
		if data, err := pins.Encode(&withURL, "fuzz"); err == nil {
			pinFile := dir + "/pins.yaml"
			if err := os.WriteFile(pinFile, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{"table", "json", "yaml"} {
				check("dev pins show -o "+format, exec("", "dev", "pins", "show", "--pin-file", pinFile, "-o", format))
			}
			check("dev up --dry-run --pin-file", exec("", "dev", "up", "--dry-run", "--kubeconfig", kubeconfig,
				"--state-dir", dir+"/state", "--pin-file", pinFile))
		}

		// An engine address (an environment variable cannot hold a NUL byte).
		for _, variable := range []string{"DOCKER_HOST", "CONTAINER_HOST"} {
			if strings.ContainsRune(endpoint, 0) {
				break
			}
			t.Setenv(variable, endpoint)
			check(variable+" in dev up --dry-run", exec("", "dev", "up", "--dry-run", "--cluster-provider", "k3d", "--state-dir", dir+"/state"))
			os.Unsetenv(variable)
		}

		// The URL fields of a state file.
		for _, field := range []string{"gatewayEndpoint", "server", "engine"} {
			recorded := map[string]any{"version": state.Version, "profile": "kubernetes", "objects": []any{},
				"cluster": map[string]any{"provider": "existing", "kubeconfig": kubeconfig, "context": "unreachable"}}
			switch field {
			case "gatewayEndpoint":
				recorded["gatewayEndpoint"] = endpoint
			case "server":
				recorded["cluster"].(map[string]any)["server"] = endpoint
			case "engine":
				recorded["engine"] = map[string]any{"kind": "docker", "endpoint": endpoint}
			}
			data, err := json.Marshal(recorded)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(stateDir+"/"+state.FileName, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{"table", "json", "yaml"} {
				check("dev status of a state whose "+field+" carries it, -o "+format, exec("", "dev", "status", "--state-dir", stateDir, "-o", format))
			}
		}
	})
}
