package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/occdev/option"
)

// The environments of `occ dev`: several can exist side by side, each with its own state
// directory. The default one keeps the directory every earlier occ used, so its state still
// loads.
const (
	// EnvEnvironment is the environment variable that names the environment when no flag does.
	EnvEnvironment = "OCC_DEVELOPMENT_ENVIRONMENT"
	// DefaultEnvironment is the environment of a command that names none.
	DefaultEnvironment = "default"
	// MaxEnvironmentLength bounds a name: it becomes part of the Compose project's name, and of
	// the container, network and volume names Compose derives from that.
	MaxEnvironmentLength = 30
	// environmentsDirName is the directory beside the default state directory that holds the
	// other environments' directories. It is a sibling, never inside the default directory:
	// `down` of the default environment removes that directory recursively, and must never
	// take another environment's record with it.
	environmentsDirName = "dev-envs"
)

var environmentPattern = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)

// environmentOption names the setting in messages.
const environmentOption = "--name (" + EnvEnvironment + ")"

// CheckEnvironment applies the rule of an environment's name: a DNS label of at most
// MaxEnvironmentLength characters that starts with a letter (it names a directory and is part
// of a Compose project name).
func CheckEnvironment(name string) error {
	if len(name) > MaxEnvironmentLength || !environmentPattern.MatchString(name) {
		return &option.Error{Option: environmentOption, Value: name,
			Rule: fmt.Sprintf("must be 1 to %d lower-case letters, digits and '-', start with a letter and end with a letter or digit", MaxEnvironmentLength),
			Fix:  "choose a name such as feature-x, or drop it for the " + DefaultEnvironment + " environment"}
	}
	return nil
}

// Location is where an environment's state lives, and the name it goes by.
type Location struct {
	// Name is the environment's name (DefaultEnvironment when none was given).
	Name string
	// Dir is its state directory.
	Dir string
	// Named says the name was given (by flag or variable), not defaulted: a name given beside an
	// explicit state directory must be the one recorded there.
	Named bool
	// DirGiven says the state directory was given (by flag or variable), not derived from the name.
	DirGiven bool
}

// Locate resolves the environment of a command: its name (name, else $OCC_DEVELOPMENT_ENVIRONMENT,
// else DefaultEnvironment, checked) and its state directory. An explicit state directory (dir, else
// $OCC_DEVELOPMENT_STATE_DIRECTORY) wins over the name's directory, as kubectl's --kubeconfig picks
// the file a --context is looked up in: the name then only labels the environment, and a command
// on an existing record refuses a name the record does not carry (CheckRecordedName).
func Locate(dir, name string) (Location, error) {
	loc := Location{Name: name}
	if loc.Name == "" {
		loc.Name = os.Getenv(EnvEnvironment)
	}
	loc.Named = loc.Name != ""
	if !loc.Named {
		loc.Name = DefaultEnvironment
	}
	if err := CheckEnvironment(loc.Name); err != nil {
		return Location{}, err
	}
	if dir == "" {
		dir = os.Getenv(EnvDirectory)
	}
	if dir != "" {
		loc.Dir, loc.DirGiven = dir, true
		return loc, nil
	}
	var err error
	loc.Dir, err = EnvironmentDir(loc.Name)
	return loc, err
}

// LocateNew is Locate for `up`, which creates the directory: the location rules (CheckPath)
// are applied to it at once, so a bad --state-dir is reported before any other work.
func LocateNew(dir, name string) (Location, error) {
	loc, err := Locate(dir, name)
	if err != nil {
		return Location{}, err
	}
	if err := CheckPath(loc.Dir); err != nil {
		return Location{}, err
	}
	return loc, nil
}

// EnvironmentDir is the state directory of the environment name when none is given: DefaultDir
// for the default environment (the directory every earlier occ used), and
// $XDG_STATE_HOME/occ/dev-envs/<name> for the others.
func EnvironmentDir(name string) (string, error) {
	def, err := DefaultDir()
	if err != nil {
		return "", err
	}
	if name == DefaultEnvironment {
		return def, nil
	}
	return filepath.Join(filepath.Dir(def), environmentsDirName, name), nil
}

// CheckRecordedName refuses a record of another environment than the one named beside an
// explicit state directory: `down --state-dir X --name a` must not remove environment b. A record
// written before environments had names is the default environment's.
func (l Location) CheckRecordedName(st State) error {
	rec := st.EnvironmentName()
	if !l.Named || !l.DirGiven || rec == l.Name {
		return nil
	}
	return &option.Error{Option: environmentOption, Value: l.Name,
		Rule: fmt.Sprintf("is not the environment recorded in %s (it records %q)", l.Dir, rec),
		Fix:  fmt.Sprintf("give --name %s with this state directory, or drop --state-dir to use environment %s's own directory", rec, l.Name)}
}

// EnvironmentName is the recorded environment's name; a record written before environments had
// names is the default one.
func (s State) EnvironmentName() string {
	if s.Environment == "" {
		return DefaultEnvironment
	}
	return s.Environment
}

// Found is a state directory found in the places names map to.
type Found struct {
	Name string
	Dir  string
}

// Environments lists the environments whose state directories exist in the places names map
// to (the default directory and those beside it), sorted by name, the default first. A
// directory there that is not a state directory (no marker) is left out; one that cannot be
// read is listed, so the reader reports why.
func Environments() ([]Found, error) {
	def, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	var out []Found
	if isStateDir(def) {
		out = append(out, Found{Name: DefaultEnvironment, Dir: def})
	}
	base := filepath.Join(filepath.Dir(def), environmentsDirName)
	entries, err := os.ReadDir(base)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list environments in %s: %w", base, err)
	}
	var named []Found
	for _, e := range entries {
		if !e.IsDir() || CheckEnvironment(e.Name()) != nil || e.Name() == DefaultEnvironment {
			continue
		}
		if p := filepath.Join(base, e.Name()); isStateDir(p) {
			named = append(named, Found{Name: e.Name(), Dir: p})
		}
	}
	slices.SortFunc(named, func(a, b Found) int { return strings.Compare(a.Name, b.Name) })
	return append(out, named...), nil
}

// isStateDir reports whether p holds occ's marker (or cannot be looked into, which the reader
// then reports).
func isStateDir(p string) bool {
	_, err := os.Lstat(filepath.Join(p, MarkerName))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// Read is Read of the environment's directory, refusing a record of another environment
// (CheckRecordedName).
func (l Location) Read() (State, error) {
	st, err := Read(l.Dir)
	if err != nil {
		return State{}, err
	}
	return st, l.CheckRecordedName(st)
}

// Open is Open of the environment's directory, refusing (and unlocking) a record of another
// environment (CheckRecordedName).
func (l Location) Open() (*Dir, error) {
	d, err := Open(l.Dir)
	if err != nil {
		return nil, err
	}
	if err := l.CheckRecordedName(d.State()); err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}
