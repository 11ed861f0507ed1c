package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// MaxCreateSandboxRequestIDs is how many request_ids one revision may spend on CreateSandbox.
// The gateway never expires an unresolved admission, so each refused id stays on the caller's
// 1000-admission account; the bound caps what one revision can leave behind.
const MaxCreateSandboxRequestIDs = 16

// createRequestIDDomain separates these derived ids from any other use of SHA-256 over a
// revision UUID. It is the string the reference implementation uses, so occ and OCE derive
// the same ids for the same revision and converge on one admission record.
const createRequestIDDomain = "openclaw.dev/openshell-create-sandbox/v1"

var hyphenatedUUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ValidRequestID reports whether id is what the gateway admits: a 36-character hyphenated,
// nonzero UUID (compared case-insensitively by the gateway).
func ValidRequestID(id string) bool {
	return hyphenatedUUID.MatchString(id) && id != "00000000-0000-0000-0000-000000000000"
}

// NewRequestID returns a fresh random request_id for one logical mutation. Workspace, provider
// and profile mutations use one per call (kept across that call's retries), which gives
// exactly-once per call; CreateSandbox uses CreateSandboxRequestIDs instead.
func NewRequestID() string { return uuid.NewString() }

// CreateSandboxRequestIDs returns the request_ids one revision uses for CreateSandbox, in the
// order they are tried: the revision UUID itself, then 15 stable RFC 9562 version-8 UUIDs
// derived from it. Each later id is the first 128 bits of
// SHA-256("openclaw.dev/openshell-create-sandbox/v1" NUL uuid NUL attempt) with the version
// nibble set to 8 and the variant bits to 10. Deriving instead of storing means every worker
// and every restart walks the same sequence, and the gateway's own admission records serve as
// the attempt counter.
func CreateSandboxRequestIDs(revisionUUID string) ([]string, error) {
	if !ValidRequestID(revisionUUID) {
		return nil, &ArgumentError{Method: "CreateSandbox", Field: "revision UUID", Value: revisionUUID,
			Rule: "must be a nonzero hyphenated UUID (36 characters), the UUID of the Agent revision"}
	}
	base := strings.ToLower(revisionUUID)
	ids := make([]string, MaxCreateSandboxRequestIDs)
	ids[0] = base
	for attempt := 1; attempt < MaxCreateSandboxRequestIDs; attempt++ {
		sum := sha256.Sum256([]byte(createRequestIDDomain + "\x00" + base + "\x00" + strconv.Itoa(attempt)))
		h := []byte(hex.EncodeToString(sum[:16]))
		h[12] = '8'
		v, _ := strconv.ParseUint(string(h[16]), 16, 8)
		h[16] = "0123456789abcdef"[(v&0x3)|0x8]
		ids[attempt] = string(h[0:8]) + "-" + string(h[8:12]) + "-" + string(h[12:16]) + "-" + string(h[16:20]) + "-" + string(h[20:32])
	}
	return ids, nil
}
