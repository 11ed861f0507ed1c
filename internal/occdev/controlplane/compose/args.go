package compose

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// UserOptions are the Compose options a user may pass after `--`: extra Compose files layered
// over compose.yaml + compose.kubernetes.yaml, and env files for interpolation. Paths are
// absolute.
type UserOptions struct {
	Files    []string
	EnvFiles []string
}

// ArgsError is a Compose option refused before anything is loaded.
type ArgsError struct {
	// Arg is the offending argument as given.
	Arg string
	// Message is the reference's message.
	Message string
	// Fix says what to do instead.
	Fix string
}

func (e *ArgsError) Error() string {
	return fmt.Sprintf("Compose option %q: %s; %s", e.Arg, e.Message, e.Fix)
}

// ParseArgs accepts the Compose global options `dev up` allows after `--`: -f/--file and
// --env-file (each with a path, as "-f x", "-fx", "--file x" or "--file=x"), and
// --project-directory only when it names the checkout itself. Everything else is refused: the
// project name, profiles and the rest are occ's to set, and a stray option could point the
// project at resources occ does not own. Relative paths are relative to workingDir.
func ParseArgs(args []string, checkout, workingDir string) (UserOptions, error) {
	var opts UserOptions
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(workingDir, p)
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, inline := arg, "", false
		switch {
		case strings.HasPrefix(arg, "--") && strings.Contains(arg, "="):
			name, value, _ = strings.Cut(arg, "=")
			inline = true
		case strings.HasPrefix(arg, "-f") && len(arg) > 2 && !strings.HasPrefix(arg, "--"):
			name, value, inline = "-f", strings.TrimPrefix(arg[2:], "="), true
		}
		switch name {
		case "-f", "--file", "--env-file", "--project-directory":
		default:
			return UserOptions{}, &ArgsError{Arg: arg, Message: "unsupported Kubernetes Compose option: " + name,
				Fix: "only -f/--file, --env-file and --project-directory (the checkout itself) may follow --; occ sets the project name, profiles and the rest"}
		}
		if !inline {
			if i+1 >= len(args) || args[i+1] == "" {
				return UserOptions{}, missingValue(name)
			}
			i++
			value = args[i]
		}
		if value == "" {
			return UserOptions{}, missingValue(name)
		}
		if value == "-" {
			return UserOptions{}, &ArgsError{Arg: arg, Message: name + " - (standard input) is not supported",
				Fix: "write the Compose file to disk and pass its path: the rendered model is recorded from files"}
		}
		switch name {
		case "-f", "--file", "--env-file":
			// A file that is not there is refused now, as every other missing input of up is.
			if fi, err := os.Stat(abs(value)); err != nil || !fi.Mode().IsRegular() {
				what := "does not exist"
				if err == nil {
					what = "is not a regular file"
				} else if !errors.Is(err, fs.ErrNotExist) {
					what = "cannot be read (" + err.Error() + ")"
				}
				return UserOptions{}, &ArgsError{Arg: arg, Message: name + " " + abs(value) + " " + what,
					Fix: "pass the path of an existing file (relative paths are relative to " + workingDir + ")"}
			}
			if name == "--env-file" {
				opts.EnvFiles = append(opts.EnvFiles, abs(value))
			} else {
				opts.Files = append(opts.Files, abs(value))
			}
		case "--project-directory":
			if !sameDir(abs(value), checkout) {
				return UserOptions{}, &ArgsError{Arg: arg, Message: "Compose project directory must be the repository",
					Fix: fmt.Sprintf("drop --project-directory or pass the checkout %s", checkout)}
			}
		}
	}
	return opts, nil
}

func missingValue(name string) error {
	msg := name + " requires a file path"
	if name == "--project-directory" {
		msg = name + " requires a path"
	}
	return &ArgsError{Arg: name, Message: msg, Fix: "write it as " + name + " <path>"}
}

// sameDir compares two directories after resolving symlinks.
func sameDir(a, b string) bool {
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	if rb, err := filepath.EvalSymlinks(b); err == nil {
		b = rb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}
