package cli

import (
	"bytes"
	"io"
	"strings"

	"github.com/sirupsen/logrus"
)

// routeLibraryLog points logrus's standard logger, the one global logger a dependency writes to
// (compose-go warns through it while loading a Compose model: an unset variable, an obsolete
// `version` attribute, a deprecated key), at occ's log w: warnings and errors only, one plain
// "warning: compose: <message>" line each, never logrus's own timestamped format on raw stderr.
// It is process-wide state, which is why it lives here with the rest of occ's globals; Execute
// sets it once per run and restores what was there before.
func routeLibraryLog(w io.Writer) (restore func()) {
	std := logrus.StandardLogger()
	out, formatter, level := std.Out, std.Formatter, std.GetLevel()
	std.SetOutput(w)
	std.SetFormatter(libraryFormatter{})
	std.SetLevel(logrus.WarnLevel)
	return func() {
		std.SetOutput(out)
		std.SetFormatter(formatter)
		std.SetLevel(level)
	}
}

// libraryFormatter writes an entry as one line: its level, "compose:" (compose-go is the only
// library in occ that logs through logrus's standard logger) and the message on one line.
type libraryFormatter struct{}

func (libraryFormatter) Format(e *logrus.Entry) ([]byte, error) {
	var b bytes.Buffer
	level := "warning"
	if e.Level <= logrus.ErrorLevel {
		level = "error"
	}
	b.WriteString(level)
	b.WriteString(": compose: ")
	b.WriteString(strings.Join(strings.Fields(e.Message), " "))
	b.WriteByte('\n')
	return b.Bytes(), nil
}
