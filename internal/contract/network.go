package contract

import (
	"net"
	"strings"
)

// NetworkHostProblem returns why host cannot be the host of an OpenShell network endpoint, or ""
// when it can. A host is a DNS name (a leading "*." wildcard allowed) or an IP address, never a
// URL, never with a port (ports have their own list) and never with credentials.
func NetworkHostProblem(host string) string {
	switch {
	case strings.TrimSpace(host) == "":
		return "endpoint host must be a nonempty string"
	case strings.Contains(host, "://") || strings.ContainsAny(host, "/?# \t\r\n"):
		return "endpoint host must be a bare host name such as github.com, without scheme, path or spaces; ports go in ports"
	case strings.Contains(host, "@"):
		return "endpoint host must be a bare host name such as github.com, without credentials"
	case looksLikeIP(host) && net.ParseIP(host) != nil:
		return ""
	case strings.ContainsAny(host, "[]"):
		return "endpoint host must be a bare host name or IP address; write an IPv6 address without brackets and its port in ports"
	case strings.Contains(host, ":"):
		h, port, _ := strings.Cut(host, ":")
		return "endpoint host must be a bare host name such as github.com, without a port: write host: " + h + ", ports: [" + port + "]"
	}
	const notAName = "endpoint host must be a DNS name such as github.com (a leading *. wildcard allowed) or an IP address"
	name := strings.TrimPrefix(strings.TrimSuffix(host, "."), "*.")
	for rest := name; ; {
		label, after, more := strings.Cut(rest, ".")
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return notAName
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return notAName
			}
		}
		if !more {
			return ""
		}
		rest = after
	}
}

// looksLikeIP reports whether host could be an IP address (an IPv6 address has a colon, an
// IPv4 address starts with a digit), so names skip the address parser.
func looksLikeIP(host string) bool {
	return strings.Contains(host, ":") || host[0] >= '0' && host[0] <= '9'
}

// ValidPort reports whether p is a TCP port.
func ValidPort(p int) bool { return p >= 1 && p <= 65535 }

// ModelEndpointHost is the model endpoint the credential source's provider profile allows with
// TLS inspection.
const ModelEndpointHost = "api.openai.com"

// MsgModelEndpoint is the rule every refusal of a network rule for the model endpoint quotes.
const MsgModelEndpoint = "Do not add a policy for the model endpoint: the credential source's provider profile allows api.openai.com with TLS inspection, and an uninspected rule for that host conflicts."

// ModelEndpointProblem returns why a network rule with this host conflicts with the model
// endpoint, or "" when it does not: the host names api.openai.com, or its leading "*." wildcard
// matches it (a wildcard matches one or more labels, so *.openai.com and *.com both cover it).
// Names compare without case and without a root dot, as DNS does.
func ModelEndpointProblem(host string) string {
	if !HostPatternMatches(host, ModelEndpointHost) {
		return ""
	}
	if strings.HasPrefix(host, "*.") {
		return MsgModelEndpoint + " The wildcard " + host + " matches " + ModelEndpointHost + ", so it is refused like the host itself; remove this endpoint or narrow the wildcard."
	}
	return MsgModelEndpoint + " Remove this endpoint."
}

// HostPatternMatches reports whether a network rule host (a name, or a "*." wildcard of one or
// more labels) matches the DNS name host.
func HostPatternMatches(pattern, host string) bool {
	p := strings.ToLower(strings.TrimSuffix(pattern, "."))
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if suffix, ok := strings.CutPrefix(p, "*."); ok {
		return strings.HasSuffix(h, "."+suffix)
	}
	return p == h
}
