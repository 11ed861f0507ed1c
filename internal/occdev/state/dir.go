package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/step"
)

// DirMode and FileMode are the state directory's mode and that of every file occ writes in it:
// private to the user who ran up.
const (
	DirMode  = 0o700
	FileMode = 0o600
)

// Sentinel errors, for errors.Is.
var (
	// ErrInUse: another process holds the directory's lock.
	ErrInUse = errors.New("state directory is in use")
	// ErrExists: `up` found a directory that already records an environment.
	ErrExists = errors.New("state directory already records a development environment")
	// ErrNotExist: `down` or `status` found no state directory.
	ErrNotExist = errors.New("state directory does not exist")
	// ErrNotEmpty: Remove was called while objects are still recorded.
	ErrNotEmpty = errors.New("state directory still records objects")
)

// Dir is a claimed, locked state directory. Its methods are safe for concurrent use: the steps
// of concurrent lanes record through one Dir, and every change is applied to the latest record
// under a mutex, so no lane's record is lost to another's write.
type Dir struct {
	path string
	// lock is an open descriptor of the directory holding the flock; closing it releases the
	// lock, so it lives exactly as long as the Dir.
	lock *os.File

	mu     sync.Mutex
	state  State
	closed bool
	now    func() time.Time
}

var _ Recorder = (*Dir)(nil)

// Create claims path for a new `up`: it creates the directory (exclusive mkdir, 0700) or adopts
// an empty private one, takes the lock, and writes the marker and state.json (O_EXCL, 0600).
// It returns only when the record is durable, so every later failure can be cleaned up from
// it. initial.Objects must be empty; Version and the timestamps are filled in.
func Create(path string, initial State) (*Dir, error) {
	p, err := checkPath(path)
	if err != nil {
		return nil, err
	}
	initial = initial.clone()
	initial.Version = Version
	if len(initial.Objects) > 0 {
		return nil, fmt.Errorf("create state in %s: a new state records no objects yet (got %d)", p, len(initial.Objects))
	}
	now := time.Now().UTC()
	initial.CreatedAt, initial.UpdatedAt = now, now
	if err := initial.Validate(); err != nil {
		return nil, fmt.Errorf("create state in %s: %w", p, err)
	}
	// Parents are created private too: the default location may not exist on a fresh machine.
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("create parent of state directory %s: %w", p, err)
	}
	// The parent may only now exist, so its canonical form is checked again.
	if p, err = checkPath(p); err != nil {
		return nil, err
	}

	made := false
	switch err := os.Mkdir(p, DirMode); {
	case err == nil:
		made = true
	case errors.Is(err, fs.ErrExist):
		if err := checkAdoptable(p); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("create state directory %s: %w", p, err)
	}
	d, err := lockDir(p)
	if err != nil {
		// Whoever holds the lock owns the directory now, even one this call created.
		return nil, err
	}
	written, err := d.initialise(initial, made)
	if err != nil {
		d.undoCreate(made, written)
		return nil, err
	}
	return d, nil
}

// initialise checks the claimed directory is fresh and writes the record. It reports which
// files it wrote so a failure can remove exactly those.
func (d *Dir) initialise(initial State, made bool) ([]string, error) {
	if err := checkPrivate(d.path, true); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if !made {
		if err := checkEmpty(d.path); err != nil {
			return nil, err
		}
		// The directory is the user's: down and a rollback empty it and leave it (Remove).
		initial.Adopted = true
	}
	d.writeHolder()
	var written []string
	if err := writeExclusive(filepath.Join(d.path, MarkerName), []byte(MarkerContent)); err != nil {
		return written, fmt.Errorf("write state marker: %w", err)
	}
	written = append(written, MarkerName)
	data, err := encode(initial)
	if err != nil {
		return written, fmt.Errorf("encode state: %w", err)
	}
	if err := writeExclusive(filepath.Join(d.path, FileName), data); err != nil {
		return written, fmt.Errorf("write state: %w", err)
	}
	written = append(written, FileName)
	if err := fsutil.SyncDir(d.path); err != nil {
		return written, fmt.Errorf("sync state directory %s: %w", d.path, err)
	}
	d.state = initial
	return written, nil
}

// checkEmpty refuses an existing directory that holds anything but what a run that died while
// claiming it left (the lock holder's note): one with a record is an environment, anything else
// is not occ's to adopt.
func checkEmpty(p string) error {
	entries, err := os.ReadDir(p)
	if err != nil {
		return fmt.Errorf("read state directory %s: %w", p, err)
	}
	for _, e := range entries {
		switch e.Name() {
		case MarkerName, FileName:
			return fmt.Errorf("%w: %s; run occ dev down --state-dir %s first, or choose another --state-dir", ErrExists, p, p)
		case holderName:
			// Left by a run that died between taking the lock and writing the marker.
		default:
			return &UnsafeError{Path: p, Reason: fmt.Sprintf("it is not empty (found %q) and has no occ marker; refusing to adopt it, choose an absent or empty directory", e.Name())}
		}
	}
	return nil
}

// Claim is Create as `up` reports it: a directory in use or already recording an environment is
// refused as Create says (its message names what to do); any other failure names the directory.
func Claim(path string, initial State) (*Dir, error) {
	d, err := Create(path, initial)
	if err != nil && !errors.Is(err, ErrInUse) && !errors.Is(err, ErrExists) {
		return nil, fmt.Errorf("claim state directory %s: %w", path, err)
	}
	return d, err
}

// DescribeClaim is what claiming dir creates, for the dry run: the locked directory, the marker,
// and the record, whose note says what it holds when it is written.
func DescribeClaim(dir, record string) step.Description {
	return step.Describe(
		step.DirAt(dir, DirMode, "locked"),
		step.FileAt(filepath.Join(dir, MarkerName), FileMode, "the development marker"),
		step.FileAt(filepath.Join(dir, FileName), FileMode, record),
	)
}

// CheckClaim says, changing nothing, whether Create could claim path by Create's own rules (the
// dry run's question): an absent directory, or an empty one private to the current user. A
// directory that records an environment is refused with an error wrapping ErrExists.
func CheckClaim(path string) error {
	p, err := checkPath(path)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := checkAdoptable(p); err != nil {
		return err
	}
	if err := checkPrivate(p, true); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return checkEmpty(p)
}

// CheckClaimFor is CheckClaim worded for the dry run of `up`: a directory that already records
// an environment is named with when it was created and down, the command that removes it.
func CheckClaimFor(path, down string) error {
	err := CheckClaim(path)
	if !errors.Is(err, ErrExists) {
		return err
	}
	created := ""
	if st, rerr := Read(path); rerr == nil {
		created = " (created " + st.CreatedAt.Format(time.RFC3339) + ")"
	}
	return fmt.Errorf("%s already records a development environment%s: run %s first, or choose another --state-dir", path, created, down)
}

// undoCreate removes what a failed Create made, so a retry is never blocked by a half-written
// record, then releases the lock.
func (d *Dir) undoCreate(made bool, written []string) {
	for _, name := range written {
		_ = os.Remove(filepath.Join(d.path, name))
	}
	_ = os.Remove(filepath.Join(d.path, holderName))
	if made {
		_ = os.Remove(d.path)
	}
	_ = d.lock.Close()
	d.closed = true
}

// Open claims an existing state directory for `down` (or a resumed `up`): it checks the path
// rules and privacy, takes the lock, and reads state.json strictly.
func Open(path string) (*Dir, error) {
	p, err := checkExisting(path)
	if err != nil {
		return nil, err
	}
	d, err := lockDir(p)
	if err != nil {
		return nil, err
	}
	s, err := readRecord(p)
	if err != nil {
		_ = d.lock.Close()
		return nil, err
	}
	d.state = s
	d.writeHolder()
	return d, nil
}

// Read returns the recorded state without taking the lock, for `status`. Writers replace
// state.json by rename, so a reader sees either the old or the new record, never a mix.
func Read(path string) (State, error) {
	p, err := checkExisting(path)
	if err != nil {
		return State{}, err
	}
	return readRecord(p)
}

func checkExisting(path string) (string, error) {
	p, err := checkPath(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s (was occ dev up run with another --state-dir or %s?)", ErrNotExist, p, EnvDirectory)
	}
	if err := checkType(p, true); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	// The marker is looked for first: a directory without it is not occ's, and occ never
	// advises changing a directory it did not make (its mode, say, when it is /etc).
	if has, err := hasMarker(p); err != nil {
		return "", fmt.Errorf("state directory %s: %w", p, err)
	} else if !has {
		return "", &UnsafeError{Path: p, Reason: fmt.Sprintf("it has no development marker (%s), so it was not created by occ dev up; occ uses and changes nothing in it. Choose another --state-dir (or %s): an absent one for up, the one occ dev up used for down and status", MarkerName, EnvDirectory)}
	}
	if err := checkPrivate(p, true); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return p, nil
}

// hasMarker reports whether dir holds an entry named like the development marker (its content
// and mode are checked when the record is read).
func hasMarker(dir string) (bool, error) {
	_, err := os.Lstat(filepath.Join(dir, MarkerName))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// checkAdoptable decides, before the lock is taken, whether `up` may claim the existing
// directory p. One that holds the marker is occ's (Create then reports the environment it
// records, or how to make it private again). One without it was not made by occ: it is adopted
// only when it is private to the current user (and, checked under the lock, empty), and is
// otherwise refused without advice to change it.
func checkAdoptable(p string) error {
	if err := checkType(p, true); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	has, err := hasMarker(p)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", p, err)
	}
	if has {
		if err := checkPrivate(p, true); err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
		return nil
	}
	if problem := privacyProblem(p); problem != "" {
		return &UnsafeError{Path: p, Reason: "it was not created by occ dev up (it has no development marker), and a directory occ adopts must be private and owned by the current user (" + problem + "): occ adopts only an absent directory, which it creates 0700, or an empty one that is already private to you; choose another --state-dir"}
	}
	return nil
}

// readRecord reads the marker and state.json; both must be private regular files, the marker
// exact, and the JSON known field for field.
func readRecord(dir string) (State, error) {
	marker := filepath.Join(dir, MarkerName)
	if err := checkPrivate(marker, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return State{}, fmt.Errorf("state directory %s has no valid development marker (%s is missing); it was not created by occ dev up, refusing to use it", dir, MarkerName)
		}
		return State{}, fmt.Errorf("state marker: %w", err)
	}
	if b, err := os.ReadFile(marker); err != nil {
		return State{}, fmt.Errorf("read state marker: %w", err)
	} else if string(b) != MarkerContent {
		return State{}, fmt.Errorf("state directory %s has no valid development marker (%s has unexpected content); refusing to use it", dir, MarkerName)
	}
	file := filepath.Join(dir, FileName)
	if err := checkPrivate(file, false); err != nil {
		return State{}, fmt.Errorf("state file: %w", err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return State{}, fmt.Errorf("read state file: %w", err)
	}
	s, err := decode(data)
	if err != nil {
		return State{}, fmt.Errorf("invalid development state %s: %w", file, err)
	}
	return s, nil
}

// lockDir opens p and takes a non-blocking exclusive flock on it.
func lockDir(p string) (*Dir, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open state directory %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: development lifecycle is already using %s (%s); wait for that command to finish or stop it, then retry", ErrInUse, p, describeHolder(p))
		}
		return nil, fmt.Errorf("lock state directory %s: %w", p, err)
	}
	return &Dir{path: p, lock: f, now: func() time.Time { return time.Now().UTC() }}, nil
}

// holder is who holds the lock; it is informational only and never trusted for decisions.
type holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
}

func (d *Dir) writeHolder() {
	host, _ := os.Hostname()
	cmd := ""
	if len(os.Args) > 0 {
		cmd = filepath.Base(os.Args[0])
		if len(os.Args) > 2 {
			// Only the subcommand words: flag values could in principle hold something private.
			cmd += " " + os.Args[1] + " " + os.Args[2]
		}
	}
	data, _ := json.Marshal(holder{PID: os.Getpid(), Host: host, Command: cmd, Since: time.Now().UTC()})
	// Best effort: a missing holder file only makes the "in use" message less specific.
	_ = writeAtomic(d.path, holderName, data)
}

func describeHolder(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, holderName))
	var h holder
	if err != nil || json.Unmarshal(data, &h) != nil || h.PID <= 0 {
		return "holder unknown"
	}
	s := fmt.Sprintf("held by pid %d", h.PID)
	if h.Command != "" {
		s += fmt.Sprintf(" (%s)", h.Command)
	}
	if h.Host != "" {
		s += " on " + h.Host
	}
	return s + " since " + h.Since.Format(time.RFC3339)
}

// Path is the state directory.
func (d *Dir) Path() string { return d.path }

// File is the path of name inside the state directory (kubeconfig, charts, Installation).
func (d *Dir) File(name string) string { return filepath.Join(d.path, name) }

// State returns a copy of the current record.
func (d *Dir) State() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state.clone()
}

// Record appends obj to the created objects and makes the record durable before returning.
// Call it before creating the object, and again once it exists with its UID or engine ID.
// Recording an object that is already recorded (a repeated, idempotent step, or the second
// call) refreshes its UID, ID and labels in place and keeps its position and creation time.
func (d *Dir) Record(obj Object) error {
	obj = obj.clone()
	return d.Update(func(s *State) {
		if obj.CreatedAt.IsZero() {
			obj.CreatedAt = d.now()
		}
		for i, o := range s.Objects {
			if sameObject(o, obj) {
				s.Objects[i].UID, s.Objects[i].ID = obj.UID, obj.ID
				if obj.Labels != nil {
					s.Objects[i].Labels = obj.Labels
				}
				return
			}
		}
		s.Objects = append(s.Objects, obj)
	})
}

// Forget removes obj from the record once it is gone, so a partial `down` leaves exactly the
// objects that still exist. Forgetting an unrecorded object is not an error.
func (d *Dir) Forget(obj Object) error { return d.ForgetAll(obj) }

// ForgetAll is Forget of objects that went together (the objects inside a deleted cluster), in
// one durable write: the record drops all of them or, on error, none.
func (d *Dir) ForgetAll(objs ...Object) error {
	return d.Update(func(s *State) {
		s.Objects = slices.DeleteFunc(s.Objects, func(o Object) bool {
			return slices.ContainsFunc(objs, func(gone Object) bool { return sameObject(o, gone) })
		})
	})
}

// Update applies fn to a copy of the record, validates it and writes it atomically (temporary
// file, fsync, rename, fsync of the directory). On error the record is unchanged.
func (d *Dir) Update(fn func(*State)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("update state in %s: the state directory is closed", d.path)
	}
	next := d.state.clone()
	fn(&next)
	next.Version = Version
	next.CreatedAt = d.state.CreatedAt
	next.UpdatedAt = d.now()
	if err := next.Validate(); err != nil {
		return fmt.Errorf("update state in %s: %w", d.path, err)
	}
	data, err := encode(next)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := writeAtomic(d.path, FileName, data); err != nil {
		return fmt.Errorf("write state %s: %w", d.File(FileName), err)
	}
	d.state = next
	return nil
}

// Close releases the lock and keeps the directory (for a later `down`).
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return d.lock.Close()
}

// Remove deletes the state directory and everything in it, then releases the lock. It refuses
// while any object is still recorded: the record is the only way to find them again, so it is
// kept, and the caller prints the retry command.
func (d *Dir) Remove() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("remove state directory %s: it is closed", d.path)
	}
	if n := len(d.state.Objects); n > 0 {
		names := make([]string, 0, n)
		for _, o := range d.state.Objects {
			names = append(names, o.String())
		}
		return fmt.Errorf("%w: keeping %s because %d recorded object(s) remain (%s); run occ dev down --state-dir %s again to finish", ErrNotEmpty, d.path, n, strings.Join(names, ", "), d.path)
	}
	// The lock is held while deleting, so no other command can claim the directory half-way. A
	// directory that existed before `up` claimed it is the user's: it is emptied and left.
	if d.state.Adopted {
		entries, err := os.ReadDir(d.path)
		if err != nil {
			return fmt.Errorf("empty state directory %s: %w", d.path, err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(d.path, e.Name())); err != nil {
				return fmt.Errorf("empty state directory %s: %w", d.path, err)
			}
		}
	} else if err := os.RemoveAll(d.path); err != nil {
		return fmt.Errorf("remove state directory %s: %w", d.path, err)
	}
	d.closed = true
	return d.lock.Close()
}

// writeExclusive creates name with O_EXCL at 0600 and syncs it. On a write error it removes its
// own partial file, so a retry is never blocked by it.
func writeExclusive(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, FileMode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(name)
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		_ = os.Remove(name)
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(name)
		return err
	}
	return nil
}

// writeAtomic replaces dir/name with data: a crash leaves either the old or the new content.
func writeAtomic(dir, name string, data []byte) error {
	return fsutil.WriteFileAtomic(filepath.Join(dir, name), data, FileMode)
}
