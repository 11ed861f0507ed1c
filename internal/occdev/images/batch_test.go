package images

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The node's shell runs a whole phase of ctr commands in one exec: a manifest printed without a
// final newline, a failing command with its own stderr, and an argument full of shell syntax
// each come back exactly as that command printed them, with its exit code. A POSIX shell and a
// ctr stand-in that prints what it is given run the generated script here.
func TestBatchScriptSplitsEachCommandsOutput(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("a POSIX shell is needed to run the batch script: %v", err)
	}
	dir := t.TempDir()
	fake := `#!/bin/sh
# Stands in for ctr: "ctr -n k8s.io VERB ARG..." (only what this test sends).
[ "$1 $2" = "-n k8s.io" ] || { echo "namespace flags missing: $*" >&2; exit 9; }
case "$3" in
content) printf '{"schemaVersion":2,"config":{"digest":"%s"}}' "$5" ;;
fail) echo "ctr: $4: not found" >&2; exit 3 ;;
echo) printf '%s\n' "$4" ;;
*) echo "unexpected: $*" >&2; exit 8 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "ctr"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	tricky := `it's "$HOME" ` + "`id`" + ` $(id) ; & | \n`
	cmds := [][]string{
		{"content", "get", "sha256:aaaa"},
		{"fail", "occ.local/import/x:c"},
		{"echo", tricky},
		{"content", "get", "sha256:bbbb"},
	}
	const boundary = "occ-batch-0123456789abcdef"
	cmd := exec.Command(sh, "-c", batchScript(cmds, boundary))
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the batch script failed as a whole: %v\n%s", err, stderr.String())
	}
	outs, codes, err := splitBatch(stdout.String(), boundary, len(cmds))
	if err != nil {
		t.Fatalf("splitBatch(stdout): %v\n%q", err, stdout.String())
	}
	errs, errCodes, err := splitBatch(stderr.String(), boundary, len(cmds))
	if err != nil {
		t.Fatalf("splitBatch(stderr): %v\n%q", err, stderr.String())
	}
	wantOut := []string{`{"schemaVersion":2,"config":{"digest":"sha256:aaaa"}}`, "", tricky + "\n", `{"schemaVersion":2,"config":{"digest":"sha256:bbbb"}}`}
	wantErr := []string{"", "ctr: occ.local/import/x:c: not found\n", "", ""}
	if !slices.Equal(outs, wantOut) || !slices.Equal(errs, wantErr) {
		t.Errorf("outputs %q, stderr %q; want %q, %q", outs, errs, wantOut, wantErr)
	}
	if want := []int{0, 3, 0, 0}; !slices.Equal(codes, want) || !slices.Equal(errCodes, want) {
		t.Errorf("exit codes %v (stderr %v), want %v", codes, errCodes, want)
	}
}

// A batch whose output lacks boundary lines (the shell is missing, or the exec was cut short) is
// an error, never a command that printed nothing.
func TestSplitBatchRefusesTruncatedOutput(t *testing.T) {
	const b = "occ-batch-x"
	for _, stream := range []string{
		"",
		"OCI runtime exec failed: exec: \"sh\": executable file not found in $PATH",
		"out\n" + b + " 0\n",                       // two commands, one boundary
		"out\n" + b + " zero\n\n" + b + " 0\n",     // an exit status that is no number
		"a\n" + b + " 0\nb\n" + b + " 0\ntrailing", // output after the last boundary
	} {
		if _, _, err := splitBatch(stream, b, 2); err == nil {
			t.Errorf("splitBatch(%q) accepted a truncated or malformed stream", stream)
		}
	}
}
