package contract

import "strings"

// Redacted replaces the part of an endpoint that may carry a credential in every message.
const Redacted = "REDACTED"

// CredentialPart names the part of the endpoint s (a URL or a bare host:port) that may carry a
// credential: userinfo (an '@' after the scheme), a query string, a fragment, or
// percent-encoding (which can hide any of the three from a reader); "" when there is none. occ
// never needs any of them in a gateway endpoint: the gateway's bearer token belongs in a token
// file, never in the URL.
func CredentialPart(s string) string {
	_, rest := splitScheme(s)
	switch {
	case strings.Contains(cutQuery(rest), "@"):
		return "userinfo (user:password@)"
	case strings.Contains(rest, "?"):
		return "a query string (?…)"
	case strings.Contains(rest, "#"):
		return "a fragment (#…)"
	case strings.Contains(rest, "%"):
		return "percent-encoding (%…), which can hide userinfo, a query or a fragment"
	}
	return ""
}

// RedactURL returns s with every part that may carry a credential replaced by REDACTED: the
// query string and the fragment ("http://gw:8080/?token=x" reads "http://gw:8080/?REDACTED"),
// everything between the scheme and the last '@' before them ("http://admin:hunter2@host"
// reads "http://REDACTED@host"), and an authority or path holding percent-encoding, which can
// hide an '@', '?' or '#'. It errs towards hiding too much: a credential must never reach a
// message, log, output or state file, and an endpoint with any of these parts is refused
// anyway. Every value a message shows about an Installation passes through it.
func RedactURL(s string) string {
	scheme, rest := splitScheme(s)
	suffix := ""
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		suffix = rest[i:i+1] + Redacted
		rest = rest[:i]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = Redacted + rest[at:]
	}
	if strings.Contains(rest, "%") {
		authority, path, hasPath := strings.Cut(rest, "/")
		if strings.Contains(authority, "%") {
			authority = Redacted
		}
		if hasPath && strings.Contains(path, "%") {
			path = Redacted
		}
		rest = authority
		if hasPath {
			rest += "/" + path
		}
	}
	return scheme + rest + suffix
}

// cutQuery is s up to its first '?' or '#'.
func cutQuery(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i]
	}
	return s
}

// splitScheme splits "scheme://rest". Only a real scheme counts (a letter, then letters, digits,
// '+', '-' or '.'), so a "://" inside a query string is never mistaken for one.
func splitScheme(s string) (scheme, rest string) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return "", s
	}
	for j, r := range s[:i] {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (j == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return "", s
		}
	}
	return s[:i+3], s[i+3:]
}
