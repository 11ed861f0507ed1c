package occdev_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/reload"
)

// reloadSignalPoints are the steps of the recorded environment's reload (as its dry run lists
// them) after which the signal matrices send their signal: after the rebuild (the import streams
// the images into the node), after the import (their verification runs) and after the first step
// that rolls the control plane (the next roll steps run). OCC_TEST_KILL_ALL_STEPS=1 signals
// after every step.
func reloadSignalPoints(t *testing.T, dir string) (points, steps []string) {
	t.Helper()
	plan, err := occdev.PlanReload(occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	steps = plan.Steps
	if os.Getenv(killAllEnv) != "" {
		return steps, steps
	}
	want := []string{"Rebuild the control-plane images", "Import the rebuilt images", "Verify the rebuilt images"}
	if len(steps) < 6 {
		t.Fatalf("the reload has too few steps to roll anything: %q", steps)
	}
	for i, w := range want {
		if !strings.HasPrefix(steps[i+1], w) {
			t.Fatalf("step %d of the reload is %q, want one starting %q: %q", i+2, steps[i+1], w, steps)
		}
	}
	t.Logf("after %d of the %d steps of the reload; set %s=1 for every step", 3, len(steps), killAllEnv)
	return []string{steps[1], steps[2], steps[4]}, steps
}

// reloadSignalEnv is an environment `up` brought up, as the reload signal matrices drive it
// through the built binary.
type reloadSignalEnv struct {
	profile string
	bin     string
	// dir is the state directory; workDir and env are where and with what the binary runs (a
	// TMPDIR of each run's own is added).
	dir, workDir string
	env          []string
	// edit changes the checkout so that the rebuild makes new images of every role.
	edit func(t *testing.T)
	// running is what each service or workload of the control plane runs now, once its API
	// answers.
	running func(t *testing.T) map[string]string
	// statusWants are what `occ dev status` of the environment always says.
	statusWants []string
	// assertReloaded checks the environment after a reload that finished: everything runs the
	// recorded images and the checkout's edit.
	assertReloaded func(t *testing.T)
	// during are points inside a step, signalled when an event the profile watches for happens.
	during []reloadSignalDuring
}

// reloadSignalDuring is a signal point inside a step: arm starts watching before the reload
// and returns a channel closed when the moment has come.
type reloadSignalDuring struct {
	name string
	arm  func(t *testing.T) <-chan struct{}
	// mayStop says that a signal there may leave a service stopped until the next reload (the
	// tool occ runs is cut short with it): status must report it, the old-or-new check waits
	// for the next reload.
	mayStop bool
	// killed, when set, checks what a SIGKILL at this point left (that it met the moment).
	killed func(t *testing.T)
}

// testReloadSignals sends sig to `occ dev reload`, the built binary, right after chosen steps
// finish and at the profile's points inside a step, each time after an edit that changes every
// image.
//
// SIGKILL (a closed laptop lid, CI's timeout, the OOM killer): `occ dev status` then reports the
// environment. SIGINT (Ctrl-C): reload exits 130, saying it was interrupted and naming the
// reload that finishes it and the down that removes it.
//
// Either way the environment runs on the images it ran before or on the rebuilt ones, service by
// service; the next `occ dev reload` finishes with exit 0 and puts everything on the rebuilt
// images; the runs leave no temporary file. The `down` of the test's end then leaves nothing.
func testReloadSignals(t *testing.T, e reloadSignalEnv, sig syscall.Signal) {
	chosen, steps := reloadSignalPoints(t, e.dir)
	name := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGINT: "SIGINT"}[sig]
	type signalPoint struct {
		name string
		// last says whether it follows the last step; first whether it precedes the rebuild.
		first, last bool
		// mayStop: a service may be left stopped until the next reload.
		mayStop bool
		run     func(t *testing.T, cmd *exec.Cmd) signalled
		killed  func(t *testing.T)
	}
	var points []signalPoint
	for _, step := range chosen {
		points = append(points, signalPoint{name: step, first: step == steps[0], last: step == steps[len(steps)-1],
			run: func(t *testing.T, cmd *exec.Cmd) signalled { return runSignalledAfter(t, cmd, step, sig) }})
	}
	for _, d := range e.during {
		points = append(points, signalPoint{name: d.name, mayStop: d.mayStop, killed: d.killed, run: func(t *testing.T, cmd *exec.Cmd) signalled {
			return runSignalledWhen(t, cmd, sig, d.name, func(string) bool { return false }, d.arm(t))
		}})
	}
	passed := 0
	for _, p := range points {
		point := p.name
		t.Run(point, func(t *testing.T) {
			before := e.running(t)
			e.edit(t)
			tmp := t.TempDir()
			run := func(args ...string) *exec.Cmd {
				cmd := exec.Command(e.bin, args...)
				cmd.Dir, cmd.Env = e.workDir, append(e.env[:len(e.env):len(e.env)], "TMPDIR="+tmp)
				return cmd
			}
			s := p.run(t, run("dev", "reload", "--state-dir", e.dir))
			t.Logf("reload after %s:\n%s\nstderr:\n%s", name, s.stdout, s.stderr)
			switch sig {
			case syscall.SIGKILL:
				if !s.killedBy(sig) {
					t.Fatalf("reload was not killed after %q: %v", point, s.err)
				}
				if p.killed != nil {
					p.killed(t)
				}
			default:
				code := 0
				var exit *exec.ExitError
				if errors.As(s.err, &exit) {
					code = exit.ExitCode()
				} else if s.err != nil {
					t.Fatal(s.err)
				}
				// A signal after the last step's line can meet a reload with nothing left to do.
				if code != 128+int(sig) && !(code == 0 && p.last) {
					t.Errorf("exit code %d after %s, want %d", code, name, 128+int(sig))
				}
				if code != 0 {
					if !strings.Contains(s.stderr, "interrupted") {
						t.Errorf("reload does not say it was interrupted:\n%s", s.stderr)
					}
					// Before the rebuild starts nothing changed, and nothing needs finishing.
					if !p.first {
						for _, w := range []string{"dev reload --state-dir " + e.dir + " again to finish the reload", "dev down --state-dir " + e.dir + " to remove it"} {
							if !strings.Contains(s.stderr, w) {
								t.Errorf("the error does not say to run %q:\n%s", w, s.stderr)
							}
						}
					}
				}
			}

			status, err := run("dev", "status", "--state-dir", e.dir).CombinedOutput()
			t.Logf("occ dev status after %s:\n%s", name, status)
			if err != nil {
				t.Errorf("occ dev status after %s: %v", name, err)
			}
			for _, w := range e.statusWants {
				if !strings.Contains(string(status), w) {
					t.Errorf("status after %s lacks %q", name, w)
				}
			}
			var mid map[string]string
			if !p.mayStop {
				mid = e.running(t)
			}

			if out, err := run("dev", "reload", "--state-dir", e.dir).CombinedOutput(); err != nil {
				t.Fatalf("the reload after %s: %v\n%s", name, err, out)
			}
			after := e.running(t)
			for svc, img := range mid {
				if img != before[svc] && img != after[svc] {
					t.Errorf("after %s %s ran %s: neither its image before (%s) nor the rebuilt one (%s)", name, svc, img, before[svc], after[svc])
				}
			}
			for svc, img := range after {
				if img == before[svc] {
					t.Errorf("the edit did not reach %s: it runs %s before and after", svc, img)
				}
			}
			e.assertReloaded(t)
			if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
				var left []string
				for _, e := range entries {
					left = append(left, e.Name())
				}
				t.Errorf("temporary files left in TMPDIR: %v", left)
			}
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("%s matrix of reload (%s profile): %d points, %d passed", name, e.profile, len(points), passed)
}
