package fsutil

import "io"

// LimitWriter passes writes to W until more than Left bytes in all would be written, then fails
// with TooLarge and writes nothing more, so a hostile or broken source cannot fill the disk or
// memory it is copied into.
type LimitWriter struct {
	W        io.Writer
	Left     int64
	TooLarge error
}

func (l *LimitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.Left {
		return 0, l.TooLarge
	}
	n, err := l.W.Write(p)
	l.Left -= int64(n)
	return n, err
}
