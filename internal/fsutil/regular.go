package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is the refusal of an input path that is not a regular file.
var ErrNotRegular = errors.New("is not a regular file")

// OpenRegular opens path for reading only when it is a regular file (a symlink to one counts). It
// opens without blocking and checks the opened file itself, so a named pipe or a device is
// refused at once instead of holding the command in open() until a writer appears, where
// neither Ctrl-C nor SIGTERM could end it; nothing is read from a refused path.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s %w (%s): occ reads its inputs only from regular files", path, ErrNotRegular, Kind(fi.Mode()))
	}
	return f, nil
}

// ReadRegular is os.ReadFile for a path OpenRegular accepts.
func ReadRegular(path string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Kind names the kind of file of mode m in words ("a named pipe", "a symlink"), for messages
// that would otherwise print a mode string.
func Kind(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symlink"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0, m&os.ModeCharDevice != 0:
		return "a device"
	}
	return "not a plain file"
}
