package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// routeLibraryLog points logrus's standard logger, the one global logger a dependency writes to
// (compose-go warns through it while loading a Compose model: an unset variable, an obsolete
// `version` attribute, a deprecated key), at occ's log w: warnings and errors only, one plain
// "warning: compose: <message>" line each, never logrus's own timestamped format on raw stderr.
// It is process-wide state, which is why it lives here with the rest of occ's globals; Execute
// sets it once per run and restores what was there before.
//
// client-go's logger (klog) and the API server's warnings take the same road, as one
// "kubernetes: <message>" or "warning: kubernetes: <message>" line each, instead of klog's
// "W1206 11:04:05.123456 …" lines cutting into the progress output.
func routeLibraryLog(w io.Writer) (restore func()) {
	std := logrus.StandardLogger()
	out, formatter, level := std.Out, std.Formatter, std.GetLevel()
	std.SetOutput(w)
	std.SetFormatter(libraryFormatter{})
	std.SetLevel(logrus.WarnLevel)
	klog.SetLogger(logr.New(klogSink{w: w}))
	rest.SetDefaultWarningHandler(kubeWarnings{w: w})
	return func() {
		std.SetOutput(out)
		std.SetFormatter(formatter)
		std.SetLevel(level)
		klog.ClearLogger()
		rest.SetDefaultWarningHandler(rest.WarningLogger{})
	}
}

// klogSink writes client-go's unconditional log lines (klog's level 0: warnings, errors) as
// occ's own lines; its verbose levels stay silent.
type klogSink struct{ w io.Writer }

func (klogSink) Init(logr.RuntimeInfo)              {}
func (klogSink) Enabled(level int) bool             { return level <= 0 }
func (k klogSink) WithValues(...any) logr.LogSink   { return k }
func (k klogSink) WithName(string) logr.LogSink     { return k }
func (k klogSink) Info(_ int, msg string, _ ...any) { k.line("kubernetes: " + msg) }
func (k klogSink) Error(err error, msg string, _ ...any) {
	k.line("error: kubernetes: " + msg + ": " + fmt.Sprint(err))
}
func (k klogSink) line(s string) {
	fmt.Fprintf(k.w, "%s\n", strings.Join(strings.Fields(s), " "))
}

// kubeWarnings writes the API server's warnings (a deprecated API, an unknown field) as occ's
// own warning lines.
type kubeWarnings struct{ w io.Writer }

func (k kubeWarnings) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	fmt.Fprintf(k.w, "warning: kubernetes: %s\n", strings.Join(strings.Fields(text), " "))
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
