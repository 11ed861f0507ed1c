package state

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// holdEnv makes the test binary act as a second `occ dev` process that holds a state directory.
const holdEnv = "OCC_STATE_TEST_HOLD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(holdEnv); dir != "" {
		os.Exit(holdDirectory(dir))
	}
	os.Exit(m.Run())
}

// holdDirectory claims dir, says "locked" on stdout and holds the lock until stdin closes.
func holdDirectory(dir string) int {
	d, err := Create(dir, sample())
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = d.Close()
	return 0
}

func sample() State {
	return State{
		Profile:           "existing",
		Cluster:           Cluster{Provider: "existing", Kubeconfig: "/home/dev/.kube/config", Context: "kind-dev", Server: "https://127.0.0.1:6443", UID: "3f1c7d2e-0000-4000-8000-000000000001"},
		PlatformNamespace: "openshell-system",
	}
}

// stateDir returns a fresh, absent state directory path with a canonical parent.
func stateDir(t *testing.T) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(base, "occ-dev")
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// `up` claims a fresh directory: 0700, marker and state.json 0600, durable before returning.
func TestCreateWritesPrivateRecord(t *testing.T) {
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer d.Close()
	if m := mode(t, p); m != 0o700 {
		t.Errorf("directory mode %#o, want 0700", m)
	}
	for _, name := range []string{MarkerName, FileName} {
		if m := mode(t, filepath.Join(p, name)); m != 0o600 {
			t.Errorf("%s mode %#o, want 0600", name, m)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(p, MarkerName)); string(b) != MarkerContent {
		t.Errorf("marker = %q", b)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatalf("Read while locked (status): %v", err)
	}
	if got.Version != Version || got.Profile != "existing" || got.Cluster.Context != "kind-dev" || got.CreatedAt.IsZero() || len(got.Objects) != 0 {
		t.Errorf("read back %+v", got)
	}
}

// `up` records objects as it creates them; `down` reopens, sees them in creation order, forgets
// each deleted one, and removes the directory only once nothing is left.
func TestRecordReopenForgetRemove(t *testing.T) {
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshell-system", UID: "u-ns"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "openshell-system", Name: "gw", UID: "u-role"}}
	nsRef, err := refOf(ns)
	if err != nil {
		t.Fatal(err)
	}
	roleRef, err := refOf(role)
	if err != nil {
		t.Fatal(err)
	}
	if nsRef.APIVersion != "v1" || nsRef.Kind != "Namespace" || roleRef.APIVersion != "rbac.authorization.k8s.io/v1" || roleRef.Kind != "Role" {
		t.Fatalf("refs from typed objects: %+v %+v", nsRef, roleRef)
	}
	release := Object{Type: TypeHelmRelease, Namespace: "openshell-system", Name: "openshell-gateway"}
	for _, o := range []Object{nsRef, roleRef, release} {
		if err := d.Record(o); err != nil {
			t.Fatalf("Record %s: %v", o, err)
		}
	}
	// A repeated idempotent step records the same object again: one entry, refreshed UID.
	roleRef.UID = "u-role-2"
	if err := d.Record(roleRef); err != nil {
		t.Fatal(err)
	}
	if err := d.Update(func(s *State) {
		s.GatewayEndpoint = "http://10.0.0.7:8080"
		s.InstallationPath = filepath.Join(p, "installation.yaml")
	}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(p)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = Open(p)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	s := d.State()
	if len(s.Objects) != 3 || !sameObject(s.Objects[0], nsRef) || !sameObject(s.Objects[1], roleRef) || !sameObject(s.Objects[2], release) {
		t.Fatalf("objects after reopen = %+v", s.Objects)
	}
	if s.Objects[1].UID != "u-role-2" || s.GatewayEndpoint != "http://10.0.0.7:8080" {
		t.Errorf("updated fields lost: %+v", s)
	}
	if err := d.Forget(release); err != nil {
		t.Fatal(err)
	}
	err = d.Remove()
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "occ dev down --state-dir "+p) || !strings.Contains(err.Error(), "v1 Namespace openshell-system") {
		t.Fatalf("Remove with objects left = %v; want ErrNotEmpty naming the objects and the retry command", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("directory must be kept after a refused Remove: %v", err)
	}
	// Objects that went together (with a deleted cluster) are forgotten in one write; an
	// unrecorded one among them is no error, and what was not named stays.
	if err := d.ForgetAll(roleRef, Object{Type: TypeHelmRelease, Namespace: "openshell-system", Name: "never-recorded"}); err != nil {
		t.Fatal(err)
	}
	if left := d.State().Objects; len(left) != 1 || !sameObject(left[0], nsRef) {
		t.Fatalf("objects after ForgetAll = %+v, want only %s", left, nsRef)
	}
	if err := d.Forget(nsRef); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory still exists after Remove: %v", err)
	}
}

// A state.json written by a newer occ (or edited by hand) must not be half-understood by down.
func TestOpenRefusesUnknownFieldsAndVersions(t *testing.T) {
	cases := map[string]func(string) string{
		"unknown top-level field": func(s string) string {
			return strings.Replace(s, `"version": 2,`, `"version": 2, "futureField": true,`, 1)
		},
		"unknown object field": func(s string) string {
			return strings.Replace(s, `"kind": "Namespace",`, `"kind": "Namespace", "finalizer": "x",`, 1)
		},
		"newer version":  func(s string) string { return strings.Replace(s, `"version": 2,`, `"version": 3,`, 1) },
		"trailing data":  func(s string) string { return s + "{}" },
		"relative paths": func(s string) string { return strings.Replace(s, `"/home/dev/.kube/config"`, `"kube/config"`, 1) },
	}
	want := map[string]string{
		"unknown top-level field": `unknown field "futureField"`,
		"unknown object field":    `unknown field "finalizer"`,
		"newer version":           "version is 3",
		"trailing data":           "trailing data",
		"relative paths":          "cluster.kubeconfig",
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			p := stateDir(t)
			d, err := Create(p, sample())
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Record(Object{Type: TypeKubernetes, Kind: "Namespace", APIVersion: "v1", Name: "oce-system"}); err != nil {
				t.Fatal(err)
			}
			d.Close()
			file := filepath.Join(p, FileName)
			b, _ := os.ReadFile(file)
			edited := edit(string(b))
			if edited == string(b) {
				t.Fatal("edit changed nothing")
			}
			if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Open(p)
			if err == nil || !strings.Contains(err.Error(), want[name]) || !strings.Contains(err.Error(), "invalid development state") {
				t.Fatalf("Open = %v, want an invalid-state error containing %q", err, want[name])
			}
		})
	}
}

// The record holds references, never content: a Secret's data and a credentialed URL must not
// reach state.json, and the refusal must not echo the secret either.
func TestNoSecretInStateFile(t *testing.T) {
	const canary = "CANARY-7f3a9c-private-key-material"
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshell-system", Name: "openshell-gateway-jwt-keys", UID: "u-secret", Annotations: map[string]string{"note": canary}},
		Data:       map[string][]byte{"signing.pem": []byte(canary)},
		StringData: map[string]string{"kid": canary},
	}
	ref, err := refOf(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Record(ref); err != nil {
		t.Fatal(err)
	}
	err = d.Update(func(s *State) { s.GatewayEndpoint = "http://admin:" + canary + "@10.0.0.7:8080" })
	if err == nil || strings.Contains(err.Error(), canary) || !strings.Contains(err.Error(), "must not carry credentials") {
		t.Fatalf("credentialed endpoint: err = %v; want a refusal that does not contain the secret", err)
	}
	err = d.Update(func(s *State) { s.Cluster.Server = "https://u:" + canary + "@[::1" })
	if err == nil || strings.Contains(err.Error(), canary) {
		t.Fatalf("unparsable credentialed URL: err = %v; want a refusal that does not contain the secret", err)
	}
	data, err := os.ReadFile(filepath.Join(p, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), canary) {
		t.Fatalf("state.json contains the secret canary:\n%s", data)
	}
	if !strings.Contains(string(data), "openshell-gateway-jwt-keys") {
		t.Fatalf("state.json lacks the Secret reference:\n%s", data)
	}
}

// Directories that hold other things (or that others can write) are refused before anything is
// created in them.
func TestUnsafeDirectoriesRefused(t *testing.T) {
	home := stateDir(t)
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)

	base := filepath.Dir(stateDir(t))
	checkout := filepath.Join(base, "oce")
	if err := os.MkdirAll(filepath.Join(checkout, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	realParent := filepath.Join(base, "real")
	if err := os.Mkdir(realParent, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(realParent, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(base, "foreign")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	selfLink := filepath.Join(base, "selflink")
	if err := os.Symlink(realParent, selfLink); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, path, want string
	}{
		{"relative", "occ-dev", "must be absolute"},
		{"root", "/", "filesystem root"},
		{"tmp itself", "/tmp", "temporary directory itself"},
		{"TMPDIR itself", os.TempDir(), "temporary directory itself"},
		{"home", home, "your home directory"},
		{"checkout", checkout, "inside the git checkout " + checkout},
		{"inside checkout", filepath.Join(checkout, "state"), "inside the git checkout"},
		{"symlinked parent", filepath.Join(base, "link", "state"), "canonical parent without symlinks"},
		{"symlink itself", selfLink, "is a symlink"},
		{"foreign non-empty", foreign, `not empty (found "notes.txt")`},
		{"group-readable", open, "must be private and owned by the current user"},
		{"regular file", file, "must be a directory"},
	}
	t.Chdir(filepath.Join(checkout))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := listing(t, base)
			d, err := Create(c.path, sample())
			if err == nil {
				d.Close()
				t.Fatalf("Create(%q) succeeded", c.path)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Create(%q) = %v, want %q", c.path, err, c.want)
			}
			if after := listing(t, base); after != before {
				t.Fatalf("refused Create changed the filesystem:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// A dotfiles repository at $HOME does not make the default location "inside a checkout".
	if err := os.Mkdir(filepath.Join(home, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(home)
	underHome := filepath.Join(home, ".local", "state", "occ", "dev")
	d, err := Create(underHome, sample())
	if err != nil {
		t.Fatalf("Create under a git-managed home: %v", err)
	}
	d.Close()

	if os.Geteuid() == 0 {
		// Only root can hand a directory to another user; the rule is the same for everyone.
		other := filepath.Join(base, "other-owner")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := Create(other, sample()); err == nil || !strings.Contains(err.Error(), "owned by the current user") {
			t.Fatalf("Create in a directory owned by uid 4242 = %v", err)
		}
	}
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := e.Info()
		names = append(names, fmt.Sprintf("%s:%v", p, fi.Mode()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, " ")
}

// A second `up` on a directory that already records an environment is told to run down first;
// an empty private directory the user made is adopted.
func TestCreateOnExistingDirectory(t *testing.T) {
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, err = Create(p, sample())
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "occ dev down --state-dir "+p) {
		t.Fatalf("second Create = %v, want ErrExists with the down command", err)
	}
	if _, err := Read(p); err != nil {
		t.Fatalf("the refused Create damaged the existing record: %v", err)
	}

	empty := stateDir(t)
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CheckClaim(empty); err != nil {
		t.Fatalf("CheckClaim of an empty private directory = %v; Create adopts it", err)
	}
	d, err = Create(empty, sample())
	if err != nil {
		t.Fatalf("Create on an empty private directory: %v", err)
	}
	if !d.State().Adopted {
		t.Error("the adopted directory is not recorded as adopted")
	}
	// The directory is the user's: Remove (down's and the rollback's end) empties it and leaves it.
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Errorf("after Remove the adopted directory holds %v (%v), want it there and empty", entries, err)
	}
	// A directory occ made goes entirely.
	made := stateDir(t)
	if err := CheckClaim(made); err != nil {
		t.Fatalf("CheckClaim of an absent directory = %v", err)
	}
	d, err = Create(made, sample())
	if err != nil {
		t.Fatal(err)
	}
	if d.State().Adopted {
		t.Error("a directory Create made is recorded as adopted")
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(made); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left the directory Create made: %v", err)
	}
	// CheckClaim refuses what Create refuses: a recorded environment, a stray file.
	if err := CheckClaim(p); !errors.Is(err, ErrExists) {
		t.Errorf("CheckClaim of a recorded environment = %v, want ErrExists", err)
	}
	// The dry run says the same with the command the user runs and when the environment was made.
	if err := CheckClaimFor(p, "occ dev down --state-dir "+p); err == nil || !strings.HasPrefix(err.Error(), p+" already records a development environment (created ") ||
		!strings.HasSuffix(err.Error(), ": run occ dev down --state-dir "+p+" first, or choose another --state-dir") {
		t.Errorf("CheckClaimFor of a recorded environment = %v", err)
	}
	if err := CheckClaimFor(made, "occ dev down"); err != nil {
		t.Errorf("CheckClaimFor of an absent directory = %v", err)
	}
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var unsafe *UnsafeError
	if err := CheckClaim(empty); !errors.As(err, &unsafe) || !strings.Contains(err.Error(), `"notes.txt"`) {
		t.Errorf("CheckClaim of a directory with a stray file = %v, want it refused naming the file", err)
	}
	if _, err := Create(empty, sample()); !errors.As(err, &unsafe) {
		t.Errorf("Create of a directory with a stray file = %v, want it refused", err)
	}

	// Invalid input is refused before the directory is even created.
	bad := stateDir(t)
	s := sample()
	s.Cluster.Provider = ""
	if _, err := Create(bad, s); err == nil || !strings.Contains(err.Error(), "cluster.provider") {
		t.Fatalf("Create with invalid state = %v", err)
	}
	if _, err := os.Lstat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("invalid Create left %s behind", bad)
	}

	// down on a directory that was never created says so, with a typed error.
	if _, err := Open(stateDir(t)); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Open of an absent directory = %v, want ErrNotExist", err)
	}
}

// Two `up` commands started at the same moment on one directory: exactly one wins.
func TestConcurrentCreateOneWins(t *testing.T) {
	p := stateDir(t)
	const n = 8
	start := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]error, n)
	dirs := make([]*Dir, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			dirs[i], results[i] = Create(p, sample())
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, err := range results {
		if err == nil {
			wins++
			defer dirs[i].Close()
			continue
		}
		if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "development lifecycle is already using "+p) {
			t.Errorf("loser %d: %v; want ErrInUse naming the directory", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d of %d concurrent Create calls won, want exactly 1", wins, n)
	}
}

// A second occ process finds the directory locked and is told which process holds it; once the
// holder exits, the lock is free again.
func TestSecondProcessRefusedNamingHolder(t *testing.T) {
	p := stateDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdEnv+"="+p)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("holder process said %q, %v", line, err)
	}

	_, err = Open(p)
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("Open while another process holds the lock = %v, want ErrInUse", err)
	}
	for _, want := range []string{p, "held by pid " + strconv.Itoa(cmd.Process.Pid)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if _, err := Create(p, sample()); !errors.Is(err, ErrInUse) {
		t.Fatalf("Create while locked = %v, want ErrInUse", err)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder process: %v", err)
	}
	d, err := Open(p)
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	d.Close()
}

// A record whose marker or file was tampered with is not acted upon.
func TestOpenRefusesTamperedRecord(t *testing.T) {
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.WriteFile(filepath.Join(p, MarkerName), []byte("something else\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "no valid development marker") {
		t.Fatalf("Open with a wrong marker = %v", err)
	}
	if err := os.WriteFile(filepath.Join(p, MarkerName), []byte(MarkerContent), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(p, FileName), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "must be private") {
		t.Fatalf("Open with a world-readable state.json = %v", err)
	}
}

// The dry run's claim step lists the directory, the marker and the record with the modes Create
// gives them; a directory another up holds is refused as Create words it, anything else names
// the directory.
func TestClaimAndItsDescription(t *testing.T) {
	p := stateDir(t)
	d := DescribeClaim(p, "written first")
	want := []string{"directory " + p + " (0700; locked)", "file " + filepath.Join(p, MarkerName) + " (0600; the development marker)", "file " + filepath.Join(p, FileName) + " (0600; written first)"}
	if !slices.Equal(d.Creates, want) || len(d.Files) != 3 {
		t.Errorf("DescribeClaim = %q, want %q", d.Creates, want)
	}
	held, err := Claim(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := Claim(p, sample()); !errors.Is(err, ErrInUse) && !errors.Is(err, ErrExists) || strings.HasPrefix(err.Error(), "claim state directory") {
		t.Errorf("second Claim = %v, want Create's own refusal", err)
	}
	bad := sample()
	bad.Objects = []Object{{Type: "x", Name: "y"}}
	if _, err := Claim(stateDir(t), bad); err == nil || !strings.HasPrefix(err.Error(), "claim state directory ") {
		t.Errorf("Claim with objects = %v, want it named with the directory", err)
	}
}
