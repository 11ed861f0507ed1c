package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
)

// An engineer's Compose file names a variable their environment does not set: compose-go warns
// while loading the model, and the warning reaches occ's log as one plain line, not logrus's
// timestamped format on the process's raw stderr; after the run the logger is as it was.
func TestComposeWarningsGoThroughOCCsLog(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte("services:\n  app:\n    image: busybox\n    environment:\n      VALUE: ${OCC_TEST_UNSET_VARIABLE}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	restore := routeLibraryLog(&log)
	po, err := cli.NewProjectOptions([]string{file}, cli.WithWorkingDirectory(dir), cli.WithName("occtest"), cli.WithEnv([]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := po.LoadProject(context.Background()); err != nil {
		t.Fatal(err)
	}
	restore()
	got := log.String()
	want := "warning: compose: The \"OCC_TEST_UNSET_VARIABLE\" variable is not set. Defaulting to a blank string.\n"
	if got != want {
		t.Fatalf("occ's log got %q, want %q", got, want)
	}
	if strings.Contains(got, "time=") || strings.Contains(got, "level=") {
		t.Fatalf("logrus's own format reached the log: %q", got)
	}
}
