package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// consoleIndex is the console page the console-build stage stamps, relative to the stage's
// working directory (/app).
const consoleIndex = "apps/controller/src/console/index.html"

// runConsoleMetadata stands in for scripts/build-console-metadata.mjs <revision>: it stamps the
// build revision (empty for a local build) into the console page as a meta element.
func runConsoleMetadata(args []string) int {
	revision := ""
	if len(args) > 0 {
		revision = args[0]
	}
	if revision != "" && !isHex40(revision) {
		fmt.Fprintf(os.Stderr, "build-console-metadata: revision %q must be 40 lower-case hex digits or empty\n", revision)
		return 1
	}
	page, err := os.ReadFile(consoleIndex)
	if err != nil {
		fmt.Fprintf(os.Stderr, "build-console-metadata: %v\n", err)
		return 1
	}
	meta := fmt.Sprintf(`<meta name="occ-build-revision" content="%s">`, revision)
	stamped := bytes.Replace(page, []byte("<head>"), []byte("<head>"+meta), 1)
	if bytes.Equal(stamped, page) {
		fmt.Fprintln(os.Stderr, "build-console-metadata: the console page has no <head>")
		return 1
	}
	if err := os.WriteFile(consoleIndex, stamped, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "build-console-metadata: %v\n", err)
		return 1
	}
	return 0
}

// runModuleFromStdin stands in for `node --input-type=module` with the program on standard
// input, the form of the runtime Dockerfile's here-document: it cannot evaluate JavaScript, so it
// requires that a module arrived (an import statement), which shows the builder fed the
// here-document to the command, and reports its size.
func runModuleFromStdin() int {
	src, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: read the module from standard input: %v\n", err)
		return 1
	}
	if !strings.Contains(string(src), "import ") {
		fmt.Fprintf(os.Stderr, "node --input-type=module: no module on standard input (%d bytes); a builder that does not read here-documents passes none\n", len(src))
		return 1
	}
	fmt.Printf("ocestandin node: read a %d-byte module from standard input (not evaluated)\n", len(src))
	return 0
}

func isHex40(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
