package gateway

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// maxTokenFileBytes bounds the read so a wrong path (a log file, a device) fails fast instead
// of being loaded into memory; real bearer tokens (JWTs included) are far smaller.
const maxTokenFileBytes = 64 << 10

// TokenFileError reports a bearer token file that cannot be used. It names the file and the
// rule, never the file's content.
type TokenFileError struct {
	Path string
	Rule string
	Err  error
}

func (e *TokenFileError) Error() string {
	msg := fmt.Sprintf("OpenShell bearer token file %s: %s", e.Path, e.Rule)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *TokenFileError) Unwrap() error { return e.Err }

// tokenRule is the one rule every token file follows, repeated in each refusal so the fix is
// obvious without reading the code.
const tokenRule = "must hold exactly one line, the token, with no spaces or control characters (one trailing newline is allowed)"

// readBearerToken reads the token file. It is called on every RPC so that a token rotated on
// disk (a projected ServiceAccount token, a renewed secret mount) is used by the next call.
func readBearerToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		// The os error names the path and the cause (missing, permission); it never holds
		// content because nothing was read.
		return "", &TokenFileError{Path: path, Rule: "cannot be opened", Err: causeOf(err)}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	if err != nil {
		return "", &TokenFileError{Path: path, Rule: "cannot be read", Err: causeOf(err)}
	}
	if len(b) > maxTokenFileBytes {
		return "", &TokenFileError{Path: path, Rule: fmt.Sprintf("is larger than %d bytes; it %s", maxTokenFileBytes, tokenRule)}
	}
	line := b
	switch {
	case bytes.HasSuffix(line, []byte("\r\n")):
		line = line[:len(line)-2]
	case bytes.HasSuffix(line, []byte("\n")):
		line = line[:len(line)-1]
	}
	if len(line) == 0 {
		return "", &TokenFileError{Path: path, Rule: "is empty; it " + tokenRule}
	}
	for _, c := range line {
		if c == '\n' || c == '\r' {
			return "", &TokenFileError{Path: path, Rule: "has more than one line; it " + tokenRule}
		}
		// Only visible ASCII is valid in an HTTP/2 header value without quoting, and a
		// space or tab would make "Bearer <token>" ambiguous.
		if c <= ' ' || c >= 0x7f {
			return "", &TokenFileError{Path: path, Rule: "contains a space, control or non-ASCII character; it " + tokenRule}
		}
	}
	return string(line), nil
}
