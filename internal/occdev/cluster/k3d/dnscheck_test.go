package k3d

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// What BusyBox 1.35's nslookup (the k3s image's kind, and the bed node's) prints for each
// outcome, taken from runs against DNSServer.
const (
	busyboxAnswer  = "Server:\t\t10.0.0.2\nAddress:\t10.0.0.2:53\n\nNon-authoritative answer:\nName:\tghcr.io\nAddress: 140.82.121.34\n\nNon-authoritative answer:\n\n"
	busyboxRefused = "Server:\t\t10.0.0.2\nAddress:\t10.0.0.2:53\n\n** server can't find ghcr.io: REFUSED\n\n** server can't find ghcr.io: REFUSED\n\n"
	busyboxNoOne   = "nslookup: write to '10.0.0.2': Connection refused\n;; connection timed out; no servers could be reached\n\n"
	busyboxTimeout = ";; connection timed out; no servers could be reached\n\n"
)

// The node's lookup is read by what the resolver did: an address is an answer whatever else
// is printed, the REFUSED code and a refused connection are refusals, and everything else
// (silence, a server failure, no such name, a node image without nslookup, an engine that did
// not run the command) proves nothing about the resolver.
func TestClassifyLookup(t *testing.T) {
	for _, c := range []struct {
		name   string
		res    engine.ExecResult
		err    error
		want   DNSOutcome
		detail string
	}{
		{"BusyBox answer", engine.ExecResult{Stdout: busyboxAnswer}, nil, DNSResolved, "answered"},
		{"old BusyBox answer", engine.ExecResult{Stdout: "Server:    10.0.0.2\nAddress 1: 10.0.0.2\n\nName:      ghcr.io\nAddress 1: 140.82.121.34\n"}, nil, DNSResolved, "answered"},
		{"BIND answer", engine.ExecResult{Stdout: "Server:\t\t10.0.0.2\nAddress:\t10.0.0.2#53\n\nNon-authoritative answer:\nName:\tghcr.io\nAddress: 140.82.121.34\n"}, nil, DNSResolved, "answered"},
		{"an A answer beside a refused AAAA", engine.ExecResult{Stdout: busyboxAnswer + "** server can't find ghcr.io: REFUSED\n", ExitCode: 1}, nil, DNSResolved, "answered"},
		{"REFUSED", engine.ExecResult{Stdout: busyboxRefused, ExitCode: 1}, nil, DNSRefused, "the server answered REFUSED"},
		{"nothing listens", engine.ExecResult{Stderr: busyboxNoOne, ExitCode: 1}, nil, DNSRefused, "connection refused: nothing answers DNS at that address"},
		{"BIND, nothing listens", engine.ExecResult{Stdout: ";; communications error to 10.0.0.2#53: connection refused\n;; no servers could be reached\n", ExitCode: 1}, nil, DNSRefused, "connection refused"},
		{"silence", engine.ExecResult{Stdout: busyboxTimeout, ExitCode: 1}, nil, DNSInconclusive, "no answer: the query timed out"},
		{"server failure", engine.ExecResult{Stdout: "Server:\t\t10.0.0.2\nAddress:\t10.0.0.2:53\n\n** server can't find ghcr.io: SERVFAIL\n", ExitCode: 1}, nil, DNSInconclusive, "the server answered SERVFAIL"},
		{"no such name", engine.ExecResult{Stdout: "** server can't find ghcr.io: NXDOMAIN\n", ExitCode: 1}, nil, DNSInconclusive, "the server answered NXDOMAIN"},
		{"unreachable network", engine.ExecResult{Stderr: "nslookup: write to '10.0.0.2': Network unreachable\n", ExitCode: 1}, nil, DNSInconclusive, "nslookup exited with 1: nslookup: write to '10.0.0.2': Network unreachable"},
		{"no nslookup in a custom node image", engine.ExecResult{Stdout: "OCI runtime exec failed: exec failed: unable to start container process: exec: \"nslookup\": executable file not found in $PATH\n", ExitCode: 127}, nil, DNSInconclusive, "nslookup exited with 127"},
		{"the engine did not run it", engine.ExecResult{}, errors.New("exec \"nslookup ghcr.io\" in container k3d-x-server-0: connection refused"), DNSInconclusive, "connection refused"},
	} {
		got, detail := classifyLookup(c.res, c.err)
		if got != c.want || !strings.Contains(detail, c.detail) {
			t.Errorf("%s: %s (%s), want %s (%s)", c.name, got, detail, c.want, c.detail)
		}
	}
}

// The host's own BusyBox nslookup against the test's servers prints what the classification
// reads (the bed's node image carries this BusyBox): an answer, the REFUSED code, and a refused
// connection once nothing listens.
func TestClassifyBusyboxAgainstTestServers(t *testing.T) {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		// The bed installs it (scripts/testdocker, busybox-static) beside its engines: missing,
		// it fails like a missing engine does, unless the bed is declared absent.
		if os.Getenv("OCC_TEST_DOCKER") == "skip" {
			t.Skipf("skipped because OCC_TEST_DOCKER=skip and there is no busybox on this host: %v", err)
		}
		t.Fatalf("no busybox on this host (%v): run scripts/testdocker, which installs busybox-static, or make test", err)
	}
	s := StartDNSServer(t, "127.0.0.1:0", netip.MustParseAddr("192.0.2.10"))
	port := s.Addr().(*net.UDPAddr).Port
	lookup := func() (engine.ExecResult, error) {
		cmd := exec.Command(bb, "nslookup", "-port="+strconv.Itoa(port), "ghcr.io", "127.0.0.1")
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return engine.ExecResult{Stdout: out.String(), Stderr: errOut.String(), ExitCode: exit.ExitCode()}, nil
		}
		return engine.ExecResult{Stdout: out.String(), Stderr: errOut.String()}, err
	}
	for _, c := range []struct {
		mode DNSMode
		want DNSOutcome
	}{{DNSAnswers, DNSResolved}, {DNSRefuses, DNSRefused}} {
		s.SetMode(c.mode)
		res, err := lookup()
		if got, detail := classifyLookup(res, err); got != c.want {
			t.Errorf("mode %d: %s (%s), want %s; output:\n%s%s", c.mode, got, detail, c.want, res.Stdout, res.Stderr)
		}
	}
	s.Close()
	res, err := lookup()
	if got, detail := classifyLookup(res, err); got != DNSRefused {
		t.Errorf("nothing listening: %s (%s); output:\n%s%s", got, detail, res.Stdout, res.Stderr)
	}
}

// The check looks up the registry the pinned images come from, by its host name: Docker Hub's
// references name a registry that is served from another host, and registries named by address
// (the test bed's) or by localhost need no DNS, so the next image's registry is taken.
func TestLookupName(t *testing.T) {
	img := func(ref string) pins.Image {
		i, err := pins.ParseImage(ref)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	bed := img("127.0.0.1:5000/openshell/gateway:dev")
	local := img("localhost:5000/openshell/gateway:dev")
	for _, c := range []struct {
		imgs []pins.Image
		want string
	}{
		{[]pins.Image{img("ghcr.io/nvidia/openshell/gateway:v1"), img("docker.io/rancher/k3s:v1.36.4-k3s1")}, "ghcr.io"},
		{[]pins.Image{img("rancher/k3s:v1.36.4-k3s1")}, "registry-1.docker.io"},
		{[]pins.Image{bed, local, img("registry.corp.example:5443/openshell/gateway:v1")}, "registry.corp.example"},
		{[]pins.Image{bed, local}, ""},
		{nil, ""},
	} {
		if got := LookupName(c.imgs...); got != c.want {
			t.Errorf("LookupName(%v) = %q, want %q", c.imgs, got, c.want)
		}
	}
}

// A refusal names the node, the name, the resolver and how it was chosen, the setting that
// chooses another and the values that work; no answer is a warning that names the same setting.
func TestNodeDNSRefusalAndWarningWording(t *testing.T) {
	rep := DNSReport{Outcome: DNSRefused, Node: "k3d-occ-dev-unit-server-0", Name: "ghcr.io", Detail: "the server answered REFUSED"}
	for _, c := range []struct {
		name     string
		dns      NodeDNS
		upstream string
		want     []string
		not      []string
	}{
		{"a resolver the user gave", NodeDNS{Choice: DNSGiven, Address: "192.0.2.53", Setting: testSetting}, "",
			[]string{"k3d node k3d-occ-dev-unit-server-0 cannot resolve ghcr.io: the resolver 192.0.2.53 given by " + testSetting + " refused the query (the server answered REFUSED)",
				"set " + testSetting + " to the IPv4 address of a DNS server the node can reach, to auto for occ's choice, or to k3d for k3d's own DNS handling, and run occ dev up again"}, nil},
		{"this host's upstream, chosen by auto", NodeDNS{Choice: DNSHostUpstream, Address: "10.0.0.2", From: "/etc/resolv.conf", Setting: testSetting}, "",
			[]string{"the resolver 10.0.0.2, this host's upstream resolver (auto: the first usable IPv4 nameserver of /etc/resolv.conf), which occ chose because " + testSetting + " is auto, refused the query",
				"set " + testSetting + " to the IPv4 address of a DNS server the node can reach, or to k3d for k3d's own DNS handling"}, []string{"to auto"}},
		{"k3d's handling, asked for", NodeDNS{Choice: DNSK3d, Setting: testSetting}, "10.0.0.2",
			[]string{"the node uses k3d's own DNS handling (" + testSetting + " is k3d), which refused the query", "iptables-nft",
				"set " + testSetting + " to the IPv4 address of a DNS server the node can reach (this host's upstream resolver 10.0.0.2, for example) or to auto for occ's choice"}, nil},
		{"k3d's handling, auto's fallback", NodeDNS{Choice: DNSK3d, Note: "/etc/resolv.conf names no IPv4 server a node can reach (only 127.0.1.1)", Setting: testSetting}, "",
			[]string{"(" + testSetting + " is auto), which refused the query", "set " + testSetting + " to the IPv4 address of a DNS server the node can reach, and run"}, []string{"to auto for"}},
	} {
		rep.DNS = c.dns
		msg := (&NodeDNSError{Report: rep, Upstream: c.upstream}).Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q lacks %q", c.name, msg, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(msg, w) {
				t.Errorf("%s: %q says %q", c.name, msg, w)
			}
		}
	}
	warn := DNSReport{Outcome: DNSInconclusive, Node: rep.Node, Name: "ghcr.io", Detail: "no answer: the query timed out", DNS: NodeDNS{Choice: DNSHostUpstream, Address: "10.0.0.2", From: "/etc/resolv.conf", Setting: testSetting}}
	if n := warn.Note(); !strings.HasPrefix(n, "warning: could not confirm that k3d-occ-dev-unit-server-0 resolves ghcr.io through 10.0.0.2, this host's upstream resolver") ||
		!strings.Contains(n, "(no answer: the query timed out); continuing") || !strings.Contains(n, "choose its resolver with "+testSetting) {
		t.Errorf("warning %q", n)
	}
	ok := DNSReport{Outcome: DNSResolved, Node: rep.Node, Name: "ghcr.io", DNS: NodeDNS{Choice: DNSGiven, Address: "192.0.2.53", Setting: testSetting}}
	if n := ok.Note(); n != "node DNS: k3d-occ-dev-unit-server-0 resolves ghcr.io through 192.0.2.53 (given by "+testSetting+")" {
		t.Errorf("note %q", n)
	}
}
