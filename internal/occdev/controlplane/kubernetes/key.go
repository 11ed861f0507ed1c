package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// PodExec runs command in a container and returns what it wrote to standard output, at most
// limit bytes. The production implementation (APIExec) goes through the API server's exec
// subresource; tests, which have no kubelet, pass a stand-in.
type PodExec interface {
	Exec(ctx context.Context, namespace, pod, container string, command []string, limit int64) ([]byte, error)
}

// KeyVerifier is the shared bootstrap-key code of both control-plane profiles,
// controlplane.KeyInstaller: it parses the service key, checks it against the live Installation
// (GET /installation with x-api-key, through the development proxy) and writes it O_EXCL 0600
// to the key destination. It returns the Installation ID. It is an interface only so the
// copy's failure paths can be driven without an API.
type KeyVerifier interface {
	VerifyAndWrite(ctx context.Context, key []byte) (installationID string, err error)
}

var _ KeyVerifier = controlplane.KeyInstaller{}

// KeyCopy copies the bootstrap output out of the cluster.
type KeyCopy struct {
	Namespace string
	// ControllerImage runs the reader (it has Node, which reads the files).
	ControllerImage string
	// PasswordFile is where the administrator password goes (<state>/initial-admin-password).
	PasswordFile string
	// Timeout bounds the wait for the reader Pod.
	Timeout time.Duration
}

// KeyResult is what the copy produced.
type KeyResult struct {
	InstallationID string
	PasswordFile   string
	AdminEmail     string
}

// readerContainer is the reader Pod's container.
const readerContainer = "reader"

// maxBootstrapFile bounds what is read from the bootstrap volume.
const maxBootstrapFile = 64 << 10

// readScript writes the file named by its first argument to standard output, byte for byte.
const readScript = `process.stdout.write(require("node:fs").readFileSync(process.argv[1]))`

// PasswordFileMode is the permission bits of the administrator password file.
const PasswordFileMode = 0o600

// ReaderPodObject mounts the bootstrap claim read-only and idles, so the files can be read
// through exec: the chart's bootstrap Job has finished and released the volume by then. It is a
// long-running Pod (restartPolicy Always): should its idle process die, the kubelet starts it
// again and the read can still happen within the wait; the copy deletes it in every case.
func ReaderPodObject(namespace string, own Ownership, controllerImage string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: ReaderPod, Namespace: namespace, Labels: own.with(nil)},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyAlways,
			AutomountServiceAccountToken: ptr(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr(true),
				RunAsUser:      ptr(int64(ControllerUID)),
				RunAsGroup:     ptr(int64(ControllerUID)),
				FSGroup:        ptr(int64(ControllerUID)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            readerContainer,
				Image:           controllerImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"node", "-e", "setInterval(() => {}, 1 << 30)"},
				Resources:       resources("10m", "32Mi", "100m", "64Mi"),
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr(false),
					ReadOnlyRootFilesystem:   ptr(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "bootstrap", MountPath: BootstrapMountPath, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "bootstrap", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: BootstrapClaim, ReadOnly: true},
			}}},
		},
	}
}

// CopyBootstrapKey reads the administrator password and the service key the bootstrap Job
// wrote, through a temporary reader Pod, writes the password to PasswordFile (O_EXCL, 0600),
// and hands the key to verifier, which checks it against the live Installation and writes it.
// The reader Pod is created through conn (recorded first) and removed in every case, on a
// context of its own, so neither a failure nor a cancelled run leaves it behind; its record is
// forgotten once it is gone. A password file this call wrote is removed again when a later part
// fails. Neither value appears in any error.
func CopyBootstrapKey(ctx context.Context, conn *kubeobj.Conn, exec PodExec, verifier KeyVerifier, req KeyCopy) (_ KeyResult, err error) {
	reader := ReaderPodObject(req.Namespace, OwnershipOf(conn), req.ControllerImage)
	record, err := kubeobj.RefOf(reader)
	if err != nil {
		return KeyResult{}, err
	}
	// Armed before the create, so a reader that exists after a failed create is removed too
	// (without a UID, the removal goes by this state's ownership label).
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := removeReader(rctx, conn, record); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove the bootstrap key reader Pod %s/%s: %w", req.Namespace, ReaderPod, rerr))
		}
	}()
	created, err := conn.Ensure(ctx, reader, kubeobj.Converge)
	if err != nil {
		return KeyResult{}, fmt.Errorf("create the bootstrap key reader Pod: %w", err)
	}
	record = kubeobj.Ref(created)
	client := conn.Kube
	wctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	if err := waitPod(wctx, client, req.Namespace, ReaderPod, func(p *corev1.Pod) (bool, error) {
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("Pod %s/%s ended (phase %s) before the bootstrap files could be read", req.Namespace, ReaderPod, p.Status.Phase)
		}
		return kube.PodReady(p), nil
	}); err != nil {
		return KeyResult{}, err
	}
	read := func(file string) ([]byte, error) {
		p := path.Join(BootstrapMountPath, file)
		out, err := exec.Exec(ctx, req.Namespace, ReaderPod, readerContainer, []string{"node", "-e", readScript, p}, maxBootstrapFile)
		if err != nil {
			return nil, fmt.Errorf("read %s from the bootstrap volume: %w", p, err)
		}
		return out, nil
	}
	password, err := read(PasswordFileName)
	if err != nil {
		return KeyResult{}, err
	}
	if len(bytes.TrimSpace(password)) == 0 {
		return KeyResult{}, errors.New("bootstrap administrator password is empty")
	}
	key, err := read(ServiceKeyFileName)
	if err != nil {
		return KeyResult{}, err
	}
	wrote, err := writePrivateOnce(req.PasswordFile, password)
	if err != nil {
		return KeyResult{}, err
	}
	id, err := verifier.VerifyAndWrite(ctx, key)
	if err != nil {
		if wrote {
			if rerr := os.Remove(req.PasswordFile); rerr != nil {
				err = errors.Join(err, fmt.Errorf("remove the copied administrator password %s: %w", req.PasswordFile, rerr))
			}
		}
		return KeyResult{}, err
	}
	return KeyResult{InstallationID: id, PasswordFile: req.PasswordFile, AdminEmail: AdminEmail}, nil
}

// removeReader deletes the reader Pod if it is still the one this run created, then forgets
// its record: gone, or never ours (a same-named Pod someone else made, which the create refused
// and the removal left alone), it is nothing `down` should look for. A reader whose removal
// fails stays recorded, so `down` tries again.
func removeReader(ctx context.Context, conn *kubeobj.Conn, record state.Object) error {
	if _, err := conn.Remove(ctx, record); err != nil {
		return err
	}
	return conn.Recorder().Forget(record)
}

// writePrivateOnce writes data to a new 0600 file. A file with exactly data already there (a
// repeated step) is accepted; anything else there is refused. It reports whether it wrote.
func writePrivateOnce(file string, data []byte) (bool, error) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, PasswordFileMode)
	if errors.Is(err, os.ErrExist) {
		have, rerr := os.ReadFile(file)
		if rerr == nil && bytes.Equal(have, data) {
			return false, nil
		}
		return false, fmt.Errorf("%s already exists with other content: it belongs to an earlier development stack; run occ dev down first", file)
	}
	if err != nil {
		return false, fmt.Errorf("create %s: %w", file, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(file)
		return false, fmt.Errorf("write %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(file)
		return false, fmt.Errorf("write %s: %w", file, err)
	}
	return true, nil
}
