package locate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
)

// nerdish is a kind registered by this test alone, as a package bringing an engine that speaks
// the Docker API registers it in one line.
var nerdish = engine.Register(engine.Registration{Kind: "nerdish", Name: "Nerdish", Component: "Nerdish Engine", Builder: engine.BuildKit})

// `occ dev up --engine Docker` or OCC_DEVELOPMENT_CONTAINER_ENGINE=kubernetes: a bad choice
// names the setting, the value and the values there are, every registered kind among them.
func TestParseChoice(t *testing.T) {
	for in, want := range map[string]Choice{"": Auto, "auto": Auto, "docker": ChooseDocker, "podman": ChoosePodman, "nerdish": Choice(nerdish.Kind)} {
		if got, err := ParseChoice(in, "--engine"); err != nil || got != want {
			t.Errorf("ParseChoice(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"Docker", "kubernetes", " podman", "Nerdish"} {
		_, err := ParseChoice(bad, ChoiceEnv)
		var oe *option.Error
		if !errors.As(err, &oe) || oe.Option != ChoiceEnv || oe.Value != bad || !strings.Contains(err.Error(), "(auto, docker, podman or nerdish)") {
			t.Errorf("ParseChoice(%q) = %v, want an option error naming %s, the value and the choices", bad, err, ChoiceEnv)
		}
	}
}

// `--engine nerdish` where no engine answers: the error names the chosen kind as its
// registration names it.
func TestNotFoundNamesTheChosenKind(t *testing.T) {
	for choice, want := range map[Choice]string{Auto: "no usable container engine (Docker or Podman) for --engine auto;",
		ChoosePodman: "no usable Podman engine for --engine podman;", Choice(nerdish.Kind): "no usable Nerdish engine for --engine nerdish;"} {
		if got := (&NotFoundError{Choice: choice, ChoiceSource: "--engine"}).Error(); !strings.HasPrefix(got, want) {
			t.Errorf("choice %s: %q, want it to start %q", choice, got, want)
		}
	}
}

// writeContext stores a docker context the way `docker context create` does.
func writeContext(t *testing.T, configDir, name, host string) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	writeFile(t, filepath.Join(configDir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"),
		`{"Name":"`+name+`","Metadata":{"Description":"test"},"Endpoints":{"docker":{"Host":"`+host+`","SkipTLSVerify":false}}}`)
}

// A docker user's engine is found in the order the docker CLI uses: DOCKER_HOST, then
// DOCKER_CONTEXT, then currentContext of ~/.docker/config.json, then the default socket.
func TestDockerPlaceFollowsTheDockerCLIOrder(t *testing.T) {
	env, _ := testEnv(t, 1000, nil)
	cfg := filepath.Join(env.Home, ".docker")
	writeFile(t, filepath.Join(cfg, "config.json"), `{"auths":{},"currentContext":"desktop-linux"}`)
	writeContext(t, cfg, "desktop-linux", "unix:///home/u/.docker/desktop/docker.sock")
	writeContext(t, cfg, "colima", "unix:///home/u/.colima/default/docker.sock")
	other := filepath.Join(env.Home, "other")
	writeFile(t, filepath.Join(other, "config.json"), `{"currentContext":"colima"}`)
	writeContext(t, other, "colima", "unix:///elsewhere/docker.sock")

	for _, c := range []struct {
		name               string
		vars               vars
		goos               string
		socket, source     string
		startMentions      string
		sourceIsPrefixOnly bool
	}{
		{"DOCKER_HOST wins over every context", vars{EnvDockerHost: "unix:///run/user/1000/docker.sock", EnvDockerContext: "colima"}, "linux", "/run/user/1000/docker.sock", "DOCKER_HOST", "unset DOCKER_HOST", false},
		{"DOCKER_CONTEXT wins over currentContext", vars{EnvDockerContext: "colima"}, "linux", "/home/u/.colima/default/docker.sock", `docker context "colima" (DOCKER_CONTEXT)`, "docker context use", false},
		{"currentContext from config.json", vars{}, "linux", "/home/u/.docker/desktop/docker.sock", `docker context "desktop-linux" (currentContext in ` + filepath.Join(cfg, "config.json") + `)`, "desktop-linux", false},
		{"DOCKER_CONFIG moves the configuration", vars{EnvDockerConfig: other}, "linux", "/elsewhere/docker.sock", `docker context "colima"`, "colima", true},
		{"the default context is the default socket", vars{EnvDockerContext: "default"}, "linux", env.system(DefaultDockerSocket), "the default Docker socket", "sudo systemctl start docker", false},
		{"Docker Desktop on macOS is started, not systemctl'd", vars{EnvDockerContext: "default"}, "darwin", env.system(DefaultDockerSocket), "the default Docker socket", "start Docker Desktop", false},
		{"socket paths are cleaned", vars{EnvDockerHost: "unix:///var/run//docker.sock"}, "linux", "/var/run/docker.sock", "DOCKER_HOST", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := env
			e.Getenv, e.GOOS = c.vars.get, c.goos
			p, err := dockerPlace(e)
			if err != nil {
				t.Fatal(err)
			}
			sourceOK := p.source == c.source || c.sourceIsPrefixOnly && strings.HasPrefix(p.source, c.source)
			if p.problem != "" || len(p.sockets) != 1 || p.sockets[0] != c.socket || !sourceOK || !strings.Contains(p.start, c.startMentions) {
				t.Fatalf("dockerPlace = %+v, want socket %s from %s, start mentioning %q", p, c.socket, c.source, c.startMentions)
			}
		})
	}
}

// A bad DOCKER_HOST or DOCKER_CONTEXT is the user's own setting: an error naming it (without a
// password in the URL). A stale currentContext in config.json (Docker Desktop uninstalled, its
// context gone) is a problem of Docker's place only, so `auto` can go on to Podman.
func TestDockerPlaceSettingsAndProblems(t *testing.T) {
	env, _ := testEnv(t, 1000, nil)
	cfg := filepath.Join(env.Home, ".docker")
	writeContext(t, cfg, "remote", "tcp://build.example:2376")
	for _, c := range []struct {
		vars         vars
		option, text string
	}{
		{vars{EnvDockerHost: "tcp://deploy:s3cret@build.example:2376"}, EnvDockerHost, "not a local unix socket"},
		{vars{EnvDockerHost: "unix://relative/docker.sock"}, EnvDockerHost, "absolute socket path"},
		{vars{EnvDockerContext: "gone"}, EnvDockerContext, "does not exist in the docker context store"},
		{vars{EnvDockerContext: "remote"}, EnvDockerContext, `has host "tcp://build.example:2376"`},
	} {
		e := env
		e.Getenv = c.vars.get
		_, err := dockerPlace(e)
		var oe *option.Error
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.Contains(err.Error(), c.text) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("dockerPlace(%v) = %v; want an option error on %s saying %q, without the password", c.vars, err, c.option, c.text)
		}
	}

	writeFile(t, filepath.Join(cfg, "config.json"), `{"currentContext":"desktop-linux"}`)
	p, err := dockerPlace(env)
	if err != nil || !strings.Contains(p.problem, "does not exist in the docker context store") || !strings.Contains(p.problem, "docker context use") || len(p.sockets) != 0 {
		t.Errorf("stale currentContext: place %+v, err %v; want a problem naming the context store and `docker context use`", p, err)
	}
	writeFile(t, filepath.Join(cfg, "config.json"), `{"currentContext":`)
	if p, err := dockerPlace(env); err != nil || !strings.Contains(p.problem, "not valid JSON") {
		t.Errorf("broken config.json: place %+v, err %v; want a problem saying the file is not valid JSON", p, err)
	}
}

// A Linux user without any Podman configuration: the rootless socket under $XDG_RUNTIME_DIR
// (or /run/user/UID), then the rootful one; root looks only at the rootful one. Each place says
// which systemctl command starts it.
func TestPodmanPlacesOnLinux(t *testing.T) {
	env, _ := testEnv(t, 1000, vars{"XDG_RUNTIME_DIR": "/run/user/1000"})
	ps, err := podmanPlaces(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].sockets[0] != "/run/user/1000/podman/podman.sock" || !strings.Contains(ps[0].start, "systemctl --user start podman.socket") ||
		ps[1].sockets[0] != env.system(RootfulPodmanSocket) || !strings.Contains(ps[1].start, "sudo systemctl start podman.socket") {
		t.Fatalf("user places = %+v", ps)
	}
	env.Getenv = vars{}.get
	if ps, _ := podmanPlaces(env); ps[0].sockets[0] != env.system("/run/user/1000/podman/podman.sock") {
		t.Errorf("without XDG_RUNTIME_DIR the rootless socket is %s, want /run/user/1000/podman/podman.sock", ps[0].sockets[0])
	}
	env.UID = func() int { return 0 }
	ps, _ = podmanPlaces(env)
	if len(ps) != 1 || ps[0].sockets[0] != env.system(RootfulPodmanSocket) || ps[0].start != "start it with `systemctl start podman.socket`" {
		t.Errorf("root places = %+v, want only the rootful socket", ps)
	}
}

// Podman's own order: CONTAINER_CONNECTION (a named connection) before CONTAINER_HOST before
// the configuration; bad values of either variable are errors naming it.
func TestPodmanPlacesFollowPodmansVariables(t *testing.T) {
	env, _ := testEnv(t, 1000, nil)
	writeFile(t, filepath.Join(env.Home, ".config", "containers", "podman-connections.json"),
		`{"Connection":{"Default":"laptop","Connections":{"laptop":{"URI":"unix:///run/user/1000/podman/podman.sock"},"ci":{"URI":"unix:///srv/ci/podman.sock"}}},"Farm":{}}`)
	for _, c := range []struct {
		vars           vars
		socket, source string
	}{
		{vars{EnvContainerConnection: "ci", EnvContainerHost: "unix:///elsewhere.sock"}, "/srv/ci/podman.sock", `Podman connection "ci" (CONTAINER_CONNECTION`},
		{vars{EnvContainerHost: "unix:/run/podman/podman.sock"}, "/run/podman/podman.sock", EnvContainerHost},
		{vars{EnvContainerHost: "unix:///tmp/podman//x.sock"}, "/tmp/podman/x.sock", EnvContainerHost},
	} {
		e := env
		e.Getenv = c.vars.get
		ps, err := podmanPlaces(e)
		if err != nil || len(ps) != 1 || ps[0].sockets[0] != c.socket || !strings.HasPrefix(ps[0].source, c.source) {
			t.Errorf("podmanPlaces(%v) = %+v, %v; want %s from %s", c.vars, ps, err, c.socket, c.source)
		}
	}
	for _, c := range []struct {
		vars         vars
		option, text string
	}{
		{vars{EnvContainerConnection: "nope"}, EnvContainerConnection, "names no Podman connection"},
		{vars{EnvContainerHost: "ssh://core@build.example:22/run/podman/podman.sock"}, EnvContainerHost, "not a local unix socket"},
		{vars{EnvContainerHost: "tcp://build.example:8888"}, EnvContainerHost, "not a local unix socket"},
	} {
		e := env
		e.Getenv = c.vars.get
		_, err := podmanPlaces(e)
		var oe *option.Error
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.Contains(err.Error(), c.text) {
			t.Errorf("podmanPlaces(%v) = %v, want an option error on %s saying %q", c.vars, err, c.option, c.text)
		}
	}
}

// Podman 4's connections live in containers.conf ([engine] active_service and
// service_destinations, as `podman system connection add` and `podman machine init` write
// them); Podman 5's in podman-connections.json, whose default and connections win. On Linux the
// native podman ignores them unless containers.conf says remote = true, so a connection added
// to a build server does not hide the local socket.
func TestPodmanConnectionsFromBothFiles(t *testing.T) {
	env, _ := testEnv(t, 1000, vars{"XDG_RUNTIME_DIR": "/run/user/1000"})
	conf := filepath.Join(env.Home, ".config", "containers", "containers.conf")
	writeFile(t, conf, `
[engine]
  active_service = "build"
  [engine.service_destinations]
    [engine.service_destinations.build]
      uri = "ssh://ci@build.example:22/run/user/1001/podman/podman.sock"
      identity = "/home/u/.ssh/id_ed25519"
    [engine.service_destinations.local]
      uri = "unix:///run/user/1000/podman/podman.sock"
`)
	ps, err := podmanPlaces(env)
	if err != nil || len(ps) != 2 || ps[0].sockets[0] != "/run/user/1000/podman/podman.sock" {
		t.Fatalf("native Linux podman with a remote default connection: %+v %v; want the local sockets", ps, err)
	}

	writeFile(t, env.system("/etc/containers/containers.conf"), "[engine]\nremote = true\n")
	ps, err = podmanPlaces(env)
	if err != nil || len(ps) != 1 || !strings.Contains(ps[0].problem, "ssh://REDACTED@build.example:22") || !strings.Contains(ps[0].problem, "not a local unix socket") ||
		!strings.Contains(ps[0].source, `default connection "build" (`+conf+`)`) {
		t.Fatalf("remote = true with a default connection to another host: %+v %v; want a problem naming it", ps, err)
	}

	conns := filepath.Join(env.Home, ".config", "containers", "podman-connections.json")
	writeFile(t, conns, `{"Connection":{"Default":"local","Connections":{"other":{"URI":"unix:///srv/other.sock"}}},"Farm":{"Default":"","List":{}}}`)
	ps, err = podmanPlaces(env)
	if err != nil || len(ps) != 1 || ps[0].sockets[0] != "/run/user/1000/podman/podman.sock" || !strings.Contains(ps[0].source, `default connection "local" (`+conns+`)`) {
		t.Fatalf("podman-connections.json's default names a containers.conf connection: %+v %v", ps, err)
	}

	writeFile(t, conns, `{"Connection":{"Default":"local","Connections":{"local":{"URI":"unix:///srv/newer.sock"}}}}`)
	if ps, _ := podmanPlaces(env); ps[0].sockets[0] != "/srv/newer.sock" {
		t.Errorf("a connection in podman-connections.json wins over containers.conf's: %+v", ps)
	}
	e := env
	e.Getenv = vars{"PODMAN_CONNECTIONS_CONF": filepath.Join(env.Home, "nowhere.json"), "XDG_RUNTIME_DIR": "/run/user/1000"}.get
	if ps, _ := podmanPlaces(e); ps[0].source != `Podman's default connection "build" (`+conf+`)` {
		t.Errorf("PODMAN_CONNECTIONS_CONF moves the connections file: %+v", ps)
	}

	writeFile(t, conns, `{"Connection":`)
	if ps, err := podmanPlaces(env); err != nil || len(ps) != 1 || !strings.Contains(ps[0].problem, "not valid JSON") || !strings.Contains(ps[0].problem, conns) {
		t.Errorf("broken podman-connections.json: %+v %v; want a problem naming the file", ps, err)
	}
	writeFile(t, conf, "[engine\n")
	if ps, err := podmanPlaces(env); err != nil || !strings.Contains(ps[0].problem, "not valid TOML") {
		t.Errorf("broken containers.conf: %+v %v", ps, err)
	}
	e.Getenv = vars{"CONTAINERS_CONF": filepath.Join(env.Home, "only.conf"), "PODMAN_CONNECTIONS_CONF": "/nonexistent"}.get
	writeFile(t, filepath.Join(env.Home, "only.conf"), "[engine]\nremote = true\nactive_service = \"x\"\n[engine.service_destinations.x]\nuri = \"unix:///only/x.sock\"\n")
	if ps, err := podmanPlaces(e); err != nil || ps[0].sockets[0] != "/only/x.sock" {
		t.Errorf("CONTAINERS_CONF replaces every other containers.conf: %+v %v", ps, err)
	}
}

// Podman Desktop on a Mac: `podman machine init` made connections to the machine (ssh to
// 127.0.0.1, IsMachine in Podman 5; the rootful one named NAME-root), and podman forwards the
// machine's API socket to this host, which is where occ must go. Podman 5 puts it at
// $TMPDIR/podman/NAME-api.sock; Podman 4 under ~/.local/share/containers/podman/machine.
func TestPodmanMachineOnMacOS(t *testing.T) {
	env, root := testEnv(t, 501, nil)
	tmp := filepath.Join(root, "T")
	env.GOOS, env.Getenv = "darwin", vars{"TMPDIR": tmp}.get
	conns := filepath.Join(env.Home, ".config", "containers", "podman-connections.json")
	writeFile(t, conns, `{"Connection":{"Default":"podman-machine-default-root","Connections":{`+
		`"podman-machine-default":{"URI":"ssh://core@127.0.0.1:50366/run/user/501/podman/podman.sock","Identity":"/Users/u/.local/share/containers/podman/machine/machine","IsMachine":true},`+
		`"podman-machine-default-root":{"URI":"ssh://root@127.0.0.1:50366/run/podman/podman.sock","Identity":"/Users/u/.local/share/containers/podman/machine/machine","IsMachine":true}}},"Farm":{}}`)
	ps, err := podmanPlaces(env)
	if err != nil || len(ps) != 1 {
		t.Fatalf("podmanPlaces = %+v, %v", ps, err)
	}
	p := ps[0]
	machines := filepath.Join(env.Home, ".local", "share", "containers", "podman", "machine")
	want := []string{
		filepath.Join(tmp, "podman", "podman-machine-default-api.sock"),
		filepath.Join(machines, "podman-machine-default", "podman.sock"),
		filepath.Join(machines, "qemu", "podman.sock"),
		filepath.Join(machines, "podman.sock"),
	}
	if strings.Join(p.sockets, " ") != strings.Join(want, " ") || p.start != "start the machine with `podman machine start podman-machine-default`" {
		t.Fatalf("machine place = %+v, want sockets %v and `podman machine start podman-machine-default`", p, want)
	}

	// The machine is stopped: Find says so, naming where it looked and what to run.
	ctx := context.Background()
	_, err = Find(ctx, Options{Choice: ChoosePodman, Env: env})
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Attempts) != 1 || !strings.Contains(err.Error(), "the machine is not running") ||
		!strings.Contains(err.Error(), want[0]) || !strings.Contains(err.Error(), "podman machine start podman-machine-default") {
		t.Fatalf("stopped machine: %v", err)
	}

	// Started (a Podman 4 machine): its socket is found and identified.
	fakeEngine(t, want[2], podmanVersionJSON)
	loc, err := Find(ctx, Options{Choice: ChoosePodman, Env: env})
	if err != nil || loc.Kind != engine.Podman || loc.Endpoint.Socket != want[2] || !strings.Contains(loc.Source, `"podman-machine-default-root"`) {
		t.Fatalf("running machine: %+v %v", loc, err)
	}

	// A Podman 4 connection in containers.conf has no is_machine, but ssh to this host is a
	// machine all the same.
	os.Remove(conns)
	writeFile(t, filepath.Join(env.Home, ".config", "containers", "containers.conf"),
		"[engine]\nactive_service = \"dev\"\n[engine.service_destinations.dev]\nuri = \"ssh://core@localhost:53615/run/user/501/podman/podman.sock\"\nidentity = \"/Users/u/.ssh/dev\"\n")
	if ps, _ := podmanPlaces(env); len(ps) != 1 || ps[0].sockets[0] != filepath.Join(tmp, "podman", "dev-api.sock") {
		t.Errorf("podman 4 machine connection: %+v", ps)
	}

	// No connection at all: the default machine, and the fix says to create it first.
	os.RemoveAll(filepath.Join(env.Home, ".config"))
	ps, _ = podmanPlaces(env)
	if len(ps) != 1 || ps[0].sockets[0] != filepath.Join(tmp, "podman", "podman-machine-default-api.sock") || !strings.Contains(ps[0].start, "podman machine init") {
		t.Errorf("no connection on macOS: %+v", ps)
	}
}

// Identification by the version endpoint: Docker's answer is Docker; Podman's (a "Podman
// Engine" component) is Podman with the Podman version; a missing socket, a stale one and a
// server that is not an engine are each told apart.
func TestIdentify(t *testing.T) {
	dir := shortDir(t)
	ctx := context.Background()
	fakeEngine(t, filepath.Join(dir, "docker.sock"), dockerVersionJSON)
	fakeEngine(t, filepath.Join(dir, "podman.sock"), podmanVersionJSON)
	fakeEngine(t, filepath.Join(dir, "web.sock"), `<html>hello</html>`)
	staleSocket(t, filepath.Join(dir, "stale.sock"))
	writeFile(t, filepath.Join(dir, "file.sock"), "")

	if id, err := Identify(ctx, Endpoint{Socket: filepath.Join(dir, "docker.sock")}); err != nil || id != (Identity{Kind: engine.Docker, Version: "28.5.2", APIVersion: "1.51", Platform: "Docker Engine - Community"}) {
		t.Errorf("Docker: %+v %v", id, err)
	}
	if id, err := Identify(ctx, Endpoint{Socket: filepath.Join(dir, "podman.sock")}); err != nil || id != (Identity{Kind: engine.Podman, Version: "4.3.1", APIVersion: "1.41", Platform: "linux/amd64/debian-12"}) {
		t.Errorf("Podman: %+v %v", id, err)
	}
	// Docker Desktop says so in its platform, which the node's DNS default goes by.
	fakeEngine(t, filepath.Join(dir, "desktop.sock"), dockerDesktopVersionJSON)
	if id, err := Identify(ctx, Endpoint{Socket: filepath.Join(dir, "desktop.sock")}); err != nil || id != (Identity{Kind: engine.Docker, Version: "27.4.0", APIVersion: "1.47", Platform: "Docker Desktop 4.37.1 (178610)"}) {
		t.Errorf("Docker Desktop: %+v %v", id, err)
	}
	for sock, reason := range map[string]string{
		"missing.sock": "does not exist",
		"stale.sock":   "a stale socket of a stopped engine",
		"web.sock":     "something other than an engine's version",
		"file.sock":    "is not a unix socket",
	} {
		_, err := Identify(ctx, Endpoint{Socket: filepath.Join(dir, sock)})
		var pe *ProbeError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, reason) {
			t.Errorf("%s: %v, want a probe error saying %q", sock, err, reason)
		}
	}
}
