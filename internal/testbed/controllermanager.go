package testbed

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	kcmOnce sync.Once
	kcmCmd  *exec.Cmd
	kcmLog  *bytes.Buffer
	kcmDir  string
	kcmErr  error
)

// ControllerManager starts the real kube-controller-manager (from the same cache as the
// apiserver, scripts/testenv) against the shared control plane, once per test binary, and stops
// it when Run returns. With it, Deployments create ReplicaSets and Pods, StatefulSets and Jobs
// create Pods, and Job, ReplicaSet and StatefulSet status follow their Pods, as on a real
// cluster; there is still no kubelet, so tests mark Pods running, ready or finished themselves
// (PlayKubelet, SetPodReady). A package that calls it must not also fake workload status.
func ControllerManager(t testing.TB) {
	t.Helper()
	Config(t)
	kcmOnce.Do(startControllerManager)
	if kcmErr != nil {
		t.Fatalf("testbed: %v", kcmErr)
	}
}

func startControllerManager() {
	assets, err := assetsDir()
	if err != nil {
		kcmErr = err
		return
	}
	bin := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		kcmErr = fmt.Errorf("kube-controller-manager not found in %s (scripts/testenv builds it): %w", assets, err)
		return
	}
	dir, err := os.MkdirTemp("", "occ-testbed-kcm-")
	if err != nil {
		kcmErr = err
		return
	}
	user, err := env.ControlPlane.AddUser(envUser("occ-test-controller-manager"), nil)
	if err != nil {
		kcmErr = fmt.Errorf("add controller-manager user: %w", err)
		return
	}
	kc, err := user.KubeConfig()
	if err != nil {
		kcmErr = fmt.Errorf("controller-manager kubeconfig: %w", err)
		return
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		kcmErr = err
		return
	}
	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--leader-elect=false",
		// No serving endpoint: several test binaries run at once and would fight over a port.
		"--secure-port=0",
		// The workload controllers and the ones that clean up after them; node, cloud, volume
		// and certificate controllers have nothing to act on without nodes.
		"--controllers=deployment-controller,replicaset-controller,statefulset-controller,job-controller,"+
			"garbage-collector-controller,namespace-controller,serviceaccount-controller,ttl-after-finished-controller",
		"--concurrent-deployment-syncs=5", "--concurrent-replicaset-syncs=5", "--concurrent-statefulset-syncs=5",
	)
	kcmLog = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = kcmLog, kcmLog
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		kcmErr = fmt.Errorf("start %s: %w", bin, err)
		return
	}
	kcmCmd, kcmDir = cmd, dir
}

// stopControllerManager ends the process ControllerManager started, if any.
func stopControllerManager() {
	if kcmCmd == nil {
		return
	}
	_ = kcmCmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = kcmCmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = kcmCmd.Process.Kill()
		<-done
	}
	if os.Getenv("OCC_TESTBED_KCM_LOG") != "" {
		fmt.Fprintf(os.Stderr, "testbed: kube-controller-manager log:\n%s\n", kcmLog.String())
	}
	_ = os.RemoveAll(kcmDir)
}

func envUser(name string) envtest.User {
	return envtest.User{Name: name, Groups: []string{"system:masters"}}
}
