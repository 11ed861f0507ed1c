package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
)

// BootstrapKeyPath is where OCE's bootstrap writes the service key inside its volume (Compose)
// or PVC (Kubernetes-only).
const BootstrapKeyPath = "/var/lib/openclaw/bootstrap/initial-admin-service-key.json"

// maxKeyFileBytes bounds a key file: the real one is a single JSON line of a few hundred bytes.
const maxKeyFileBytes = 64 << 10

// errKeyShape is the reference's message for a key file without its two required members.
var errKeyShape = errors.New("bootstrap service key is missing its key or Installation ID")

// ServiceKey is a parsed bootstrap service key. The secret is unexported and every way of
// formatting it (value or pointer) prints only the Installation ID, so a key handed to a
// logger, an error or a JSON encoder cannot leak.
type ServiceKey struct {
	installationID string
	secret         string
	// raw is the file exactly as bootstrap wrote it, which is what the user's key file holds.
	raw []byte
}

// ParseServiceKey parses a bootstrap service-key file: {"data": {"key": …}, "meta":
// {"installationId": …}}. The key must be non-blank without line breaks (OCC's CLI rule) and
// the Installation ID non-empty. Errors never quote the file.
func ParseServiceKey(data []byte) (*ServiceKey, error) {
	if len(data) > maxKeyFileBytes {
		return nil, fmt.Errorf("bootstrap service key is larger than %d bytes; it is not a key file", maxKeyFileBytes)
	}
	var doc struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
		Meta struct {
			InstallationID string `json:"installationId"`
		} `json:"meta"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		// The decoder's message can quote a character of the input, which may be the secret.
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("bootstrap service key is not a JSON document (syntax error at byte %d)", syn.Offset)
		}
		return nil, errors.New("bootstrap service key is not a JSON document of the expected shape")
	}
	if strings.TrimSpace(doc.Data.Key) == "" || strings.TrimSpace(doc.Meta.InstallationID) == "" {
		return nil, errKeyShape
	}
	if strings.ContainsAny(doc.Data.Key, "\r\n") {
		return nil, errors.New("bootstrap service key has a line break in data.key; it is not a usable key")
	}
	if !printableID(doc.Meta.InstallationID) {
		return nil, errors.New("bootstrap service key has an Installation ID with control characters or of more than 128 characters")
	}
	return &ServiceKey{installationID: doc.Meta.InstallationID, secret: doc.Data.Key, raw: bytes.Clone(data)}, nil
}

func printableID(s string) bool {
	if len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// InstallationID is meta.installationId of the key file.
func (k *ServiceKey) InstallationID() string { return k.installationID }

// String names the key by its Installation ID only.
func (k ServiceKey) String() string {
	return "bootstrap service key for Installation " + k.installationID + " [key redacted]"
}

// GoString keeps %#v from printing the fields.
func (k ServiceKey) GoString() string { return k.String() }

// Format keeps every verb (%v, %+v, %#v, %s, %q, %x) from printing the fields.
func (k ServiceKey) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// MarshalJSON keeps the secret out of any JSON the key ends up in (a state or a report).
func (k ServiceKey) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"installationId": k.installationID, "key": "[redacted]"})
}

// Installation is the part of GET /installation the development checks read.
type Installation struct {
	ID        string `json:"id"`
	Name      string `json:"name,omitempty"`
	CreatedAt string `json:"createdAt,omitempty"`
}

// VerifyKeyOptions are the inputs of VerifyServiceKey.
type VerifyKeyOptions struct {
	// APIURL is the OCC origin (for Compose, the controller's loopback publication).
	APIURL string
	// Client is the HTTP client; nil means NewAPIClient(APITimeout).
	Client *http.Client
}

// VerifyServiceKey proves the key works against the live Installation: GET /installation with
// the key in x-api-key must answer the Installation whose data.id is the key's Installation ID.
// A key that authenticates but belongs to another Installation (a stale volume, another
// stack on the same port) is refused as a mismatch.
func VerifyServiceKey(ctx context.Context, key *ServiceKey, opts VerifyKeyOptions) (Installation, error) {
	origin, err := ParseAPIURL(opts.APIURL)
	if err != nil {
		return Installation{}, fmt.Errorf("Installation authorization failed: %w", err)
	}
	client := opts.Client
	if client == nil {
		client = NewAPIClient(APITimeout)
	}
	data, err := apiCall{client: client, origin: origin, path: "/installation", key: key.secret}.do(ctx)
	if err != nil {
		return Installation{}, fmt.Errorf("Installation authorization failed: %w", err)
	}
	var inst Installation
	if err := json.Unmarshal(data, &inst); err != nil || inst.ID == "" {
		return Installation{}, fmt.Errorf("Installation authorization failed: GET %s/installation answered no Installation ID in data.id", origin)
	}
	if inst.ID != key.installationID {
		if !printableID(inst.ID) {
			inst.ID = "(unprintable)"
		}
		return Installation{}, fmt.Errorf("Installation ID does not match the bootstrap service key: the key belongs to %s but %s/installation answered %s; the key was written by another bootstrap (stale volumes or another stack on the same port), so it is not used",
			key.installationID, origin, inst.ID)
	}
	return inst, nil
}
