package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// supervisor runs the node's real component processes. Their output goes to files under
// /var/log/k3s-standin (the container log carries only the stand-in's own lines, which k3d
// scans); when one of them exits the whole server stops, printing the tail of its log, so the
// container exits and the failure is visible instead of a half-working node.
type supervisor struct {
	logDir string
	failed chan error

	mu    sync.Mutex
	procs []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func newSupervisor(logDir string) (*supervisor, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	return &supervisor{logDir: logDir, failed: make(chan error, 8)}, nil
}

func (s *supervisor) start(name, binary string, args ...string) (*proc, error) {
	logFile := filepath.Join(s.logDir, name+".log")
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logFile, done: make(chan struct{})}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		out.Close()
		close(p.done)
		select {
		case s.failed <- fmt.Errorf("%s exited (%v); last lines of %s:\n%s", name, err, logFile, tail(logFile, 20)):
		default: // a failure is already being reported
		}
	}()
	return p, nil
}

// stop asks every process to terminate, latest first, and waits a bounded time for each.
func (s *supervisor) stop() {
	s.mu.Lock()
	procs := append([]*proc(nil), s.procs...)
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// waitFor polls ready until it succeeds, the process dies, or the deadline passes. Components
// offer no readiness notification other than answering, so polling their endpoint is the wait.
func waitFor(ctx context.Context, p *proc, what string, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s: process exited before it was ready; last lines of %s:\n%s", what, p.log, tail(p.log, 20))
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready within %s: %v; last lines of %s:\n%s", what, timeout, last, p.log, tail(p.log, 20))
		case <-tick.C:
		}
	}
}

func tail(file string, n int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
