package contract

import "strings"

// Redacted replaces the userinfo of an endpoint in every message.
const Redacted = "REDACTED"

// HasUserinfo reports whether the endpoint s (a URL or a bare host:port) carries userinfo,
// that is an '@' after the scheme.
func HasUserinfo(s string) bool {
	_, rest := splitScheme(s)
	return strings.Contains(rest, "@")
}

// RedactUserinfo returns s with everything between the scheme and the last '@' replaced by
// REDACTED, so "http://admin:hunter2@host:30051" reads "http://REDACTED@host:30051". It errs
// towards hiding too much: a credential must never reach a message, log or output, and an
// endpoint with an '@' in its path is refused anyway.
func RedactUserinfo(s string) string {
	scheme, rest := splitScheme(s)
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	return scheme + Redacted + rest[at:]
}

func splitScheme(s string) (scheme, rest string) {
	if i := strings.Index(s, "://"); i >= 0 {
		return s[:i+3], s[i+3:]
	}
	return "", s
}
