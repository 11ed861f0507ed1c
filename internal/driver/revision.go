package driver

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Harness modes. Only dedicated Harnesses can be provisioned by a Sandbox driver; embedded
// execution runs inside the Agent Gateway and is never sandboxed separately.
const (
	HarnessModeDedicated = "dedicated"
	HarnessModeEmbedded  = "embedded"
)

// Harness runtimes the bundled drivers know.
const (
	HarnessCodex    = "codex"
	HarnessOpenClaw = "openclaw"
)

// Harness is the resolved Harness descriptor of an Agent revision.
type Harness struct {
	// ID is the Harness runtime, e.g. "codex" or "openclaw".
	ID string `json:"id"`
	// Mode is "dedicated" or "embedded".
	Mode string `json:"mode"`
}

// Configuration is an Agent's native configuration (OpenClaw or Codex settings) as a decoded
// JSON object. It is deliberately untyped: OCC freezes whatever the Harness accepts, and a
// driver only touches the few keys its containment depends on.
type Configuration map[string]any

// Clone returns a deep copy, so a transform can never alias the caller's read-only value.
func (c Configuration) Clone() Configuration {
	if c == nil {
		return nil
	}
	return cloneValue(map[string]any(c)).(map[string]any)
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = cloneValue(e)
		}
		return out
	case Configuration:
		return cloneValue(map[string]any(t))
	default:
		// JSON scalars (string, float64, bool, nil, json.Number) are immutable values.
		return t
	}
}

// ParseConfiguration decodes a JSON object, keeping numbers exact (json.Number) so a
// round trip through a driver never rewrites an integer as a float.
func ParseConfiguration(data []byte) (Configuration, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode Agent configuration: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode Agent configuration: trailing data after the JSON object")
	}
	if m == nil {
		return nil, fmt.Errorf("decode Agent configuration: must be a JSON object, not null")
	}
	return Configuration(m), nil
}

// Revision is the immutable Agent revision a Harness runs. Drivers never see mutable Agent
// state; everything they may act on is frozen here.
type Revision struct {
	// AgentID is the OCC Agent ID.
	AgentID string `json:"agentId"`
	// ID is the revision ID, rev_<uuid>. The UUID seeds gateway request IDs, so it must be
	// stable for the revision's whole life.
	ID string `json:"revisionId"`
	// NamespaceID is the OCC Namespace the revision was admitted into.
	NamespaceID string `json:"namespaceId"`
	// Harness is the resolved Harness descriptor.
	Harness Harness `json:"harness"`
	// Configuration is the frozen native configuration (after ConfigureAgent).
	Configuration Configuration `json:"configuration,omitempty"`
	// SandboxDriverID is the Sandbox driver the revision is pinned to; empty means none.
	SandboxDriverID string `json:"sandboxDriverId,omitempty"`
}

var revisionIDPattern = regexp.MustCompile(`^rev_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`)

// RevisionUUID returns the UUID inside a rev_<uuid> revision ID (lower-case, hyphenated), or
// an error naming the rule.
func RevisionUUID(revisionID string) (string, error) {
	m := revisionIDPattern.FindStringSubmatch(strings.ToLower(revisionID))
	if m == nil || m[1] == "00000000-0000-0000-0000-000000000000" {
		return "", fmt.Errorf("revision ID %q must be rev_ followed by a nonzero hyphenated UUID (for example rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31)", revisionID)
	}
	return m[1], nil
}
