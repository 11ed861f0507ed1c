package option

import (
	"errors"
	"fmt"
	"os"
)

// RegularFile applies the rule every setting that names a local input file shares: the path
// names a regular file that can be read. What it breaks is said as an Error's Rule ("does not
// exist", "is not a regular file"), for the Error of the setting that named it.
func RegularFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("does not exist")
	case err != nil:
		return fmt.Errorf("cannot be read (%v)", err)
	case !fi.Mode().IsRegular():
		return errors.New("is not a regular file")
	}
	return nil
}
