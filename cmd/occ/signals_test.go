package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/state"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// occBinary builds this command once per test binary, as `make build` does.
func occBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "occ-signals-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "occ")
		build := exec.Command("go", "build", "-trimpath", "-o", builtBin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return builtBin
}

// silentEngine listens where an engine's socket would be, accepts, and never answers, as an
// engine that hangs (a Docker Desktop mid-update) does. Each accepted connection is announced on
// the returned channel: the command is then inside its work, past installing its signal handler.
func silentEngine(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	dir, err := os.MkdirTemp("", "occ-sig")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 16)
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			accepted <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return sock, accepted
}

// started is a running occ whose standard error is read line by line.
type started struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr strings.Builder
	done   chan struct{}
}

func start(t *testing.T, env []string, args ...string) *started {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(occBinary(t), args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"))
	cmd.Env = append(cmd.Env, env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &started{cmd: cmd, lines: make(chan string, 64), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			s.stderr.WriteString(sc.Text() + "\n")
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return s
}

// wait waits for the process and returns its exit code and standard error.
func (s *started) wait(t *testing.T) (int, string) {
	t.Helper()
	<-s.done
	err := s.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("wait: %v", err)
	}
	return s.cmd.ProcessState.ExitCode(), s.stderr.String()
}

// awaitLine waits for a line of standard error that contains want.
func (s *started) awaitLine(t *testing.T, want string) {
	t.Helper()
	for line := range s.lines {
		if strings.Contains(line, want) {
			return
		}
	}
	t.Fatalf("standard error ended without a line containing %q:\n%s", want, s.stderr.String())
}

// Ctrl-C (and SIGTERM) while `occ dev up` waits on a hung engine stops it at once: exit 130
// (143), an error that says it was interrupted, not the engine's 10-second timeout, and no state.
func TestSignalDuringUpExitsWithTheShellsCode(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			sock, accepted := silentEngine(t)
			stateDir := filepath.Join(t.TempDir(), "state")
			s := start(t, []string{"DOCKER_HOST=unix://" + sock, state.EnvDirectory + "=" + stateDir},
				"dev", "up", "--cluster-provider", "k3d", "--control-plane", "kubernetes")
			<-accepted
			began := time.Now()
			if err := s.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			code, stderr := s.wait(t)
			t.Logf("exit %d %s after the signal:\n%s", code, time.Since(began).Round(time.Millisecond), stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if !strings.Contains(stderr, "interrupted") || strings.Contains(stderr, "did not answer") {
				t.Errorf("the error does not say up was interrupted (or waited out the engine's timeout):\n%s", stderr)
			}
			if _, err := os.Stat(stateDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("an interrupted up left its state directory: %v", err)
			}
		})
	}
}

// During `occ dev down` the first Ctrl-C is ignored, with a line that says so; the second stops
// it, and the state stays, with the command that finishes the cleanup.
func TestDownIgnoresTheFirstCtrlC(t *testing.T) {
	sock, accepted := silentEngine(t)
	stateDir := filepath.Join(t.TempDir(), "state")
	d, err := state.Create(stateDir, state.State{Profile: "kubernetes", Cluster: state.Cluster{Provider: "k3d", Name: "occ-dev-signals"},
		Engine: &state.Engine{Kind: state.EngineDocker, Endpoint: "unix://" + sock, ID: "signals-test-engine"}})
	if err != nil {
		t.Fatal(err)
	}
	// A volume only the recorded engine can remove: down must reach the engine for it.
	if err := d.Record(state.Object{Type: "volume", Name: "occ-dev-signals-data", Labels: map[string]string{"com.docker.compose.project": "occ-dev-signals"}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{state.EnvDirectory + "=" + stateDir}, "dev", "down")
	<-accepted
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	s.awaitLine(t, "Ctrl-C (SIGINT) ignored")
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, stderr := s.wait(t)
	t.Logf("exit %d:\n%s", code, stderr)
	if code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	if !strings.Contains(stderr, "occ dev down") || !strings.Contains(stderr, stateDir) {
		t.Errorf("the error does not name the state directory and the command that finishes the cleanup:\n%s", stderr)
	}
	if _, err := state.Read(stateDir); err != nil {
		t.Errorf("the stopped down did not keep its state: %v", err)
	}
}
