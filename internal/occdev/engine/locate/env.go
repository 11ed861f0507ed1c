package locate

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
)

// Env is where location looks: the process environment, the user's home directory, the
// operating system and user, and the filesystem root of the system paths (/var/run/docker.sock,
// /run/podman/podman.sock, /etc/containers). The zero value reads the running process's; tests
// substitute each part.
type Env struct {
	// Getenv reads an environment variable; nil means os.Getenv.
	Getenv func(string) string
	// Home is the user's home directory; empty means os.UserHomeDir.
	Home string
	// GOOS is the operating system ("linux", "darwin"); empty means runtime.GOOS.
	GOOS string
	// UID returns the user's id (0 is root, whose Podman socket is the rootful one); nil means
	// os.Getuid.
	UID func() int
	// SystemRoot is prefixed to the system paths occ looks at; empty means "/".
	SystemRoot string
}

func (e Env) getenv(name string) string {
	if e.Getenv == nil {
		return os.Getenv(name)
	}
	return e.Getenv(name)
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return runtime.GOOS
	}
	return e.GOOS
}

func (e Env) uid() int {
	if e.UID == nil {
		return os.Getuid()
	}
	return e.UID()
}

func (e Env) home() (string, error) {
	if e.Home != "" {
		return e.Home, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("find the home directory: " + err.Error())
	}
	return h, nil
}

// system maps an absolute system path into SystemRoot.
func (e Env) system(p string) string {
	if e.SystemRoot == "" {
		return p
	}
	return filepath.Join(e.SystemRoot, p)
}

// configHome is $XDG_CONFIG_HOME, else ~/.config, as Podman reads it on every platform.
func (e Env) configHome() (string, error) {
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		return d, nil
	}
	h, err := e.home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".config"), nil
}

// dataHome is $XDG_DATA_HOME, else ~/.local/share, where Podman keeps its machines' data.
func (e Env) dataHome() (string, error) {
	if d := e.getenv("XDG_DATA_HOME"); d != "" {
		return d, nil
	}
	h, err := e.home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".local", "share"), nil
}

// userRuntimeDir is $XDG_RUNTIME_DIR, else /run/user/UID, where a rootless Podman listens.
func (e Env) userRuntimeDir() string {
	if d := e.getenv("XDG_RUNTIME_DIR"); d != "" {
		return d
	}
	return e.system(filepath.Join("/run/user", strconv.Itoa(e.uid())))
}
