package driver

import (
	"errors"
	"fmt"
	"testing"
)

// A revision ID from OCC carries a UUID that seeds gateway request IDs; anything else is refused.
func TestRevisionUUID(t *testing.T) {
	got, err := RevisionUUID("rev_3F2B9C4E-8D1A-4B6F-9E2D-1C0A7B5E4F31")
	if err != nil || got != "3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31" {
		t.Fatalf("RevisionUUID = %q, %v; want the lower-case UUID", got, err)
	}
	for _, bad := range []string{"", "rev_", "3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31", "rev_00000000-0000-0000-0000-000000000000", "rev_3f2b9c4e8d1a4b6f9e2d1c0a7b5e4f31", "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31x"} {
		if _, err := RevisionUUID(bad); err == nil {
			t.Errorf("RevisionUUID(%q) accepted a malformed revision ID", bad)
		}
	}
}

// A driver transform works on a deep copy: the caller's frozen configuration never changes.
func TestConfigurationCloneIsDeep(t *testing.T) {
	orig, err := ParseConfiguration([]byte(`{"a":{"b":[1,{"c":2}]},"n":12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	c := orig.Clone()
	c["a"].(map[string]any)["b"].([]any)[1].(map[string]any)["c"] = "changed"
	if fmt.Sprint(orig["a"]) != "map[b:[1 map[c:2]]]" {
		t.Fatalf("clone aliased the original: %v", orig)
	}
	if fmt.Sprint(orig["n"]) != "12345678901234567890" {
		t.Fatalf("large integer was not kept exact: %v", orig["n"])
	}
	if _, err := ParseConfiguration([]byte(`null`)); err == nil {
		t.Fatal("null accepted as a configuration object")
	}
	if _, err := ParseConfiguration([]byte(`{} {}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

// Compute's activation gate: pending or missing waits, any terminal non-ready state fails.
func TestEvaluateAttachments(t *testing.T) {
	want := []CredentialAttachment{{SourceID: "s1", Ref: "oce-cs-1"}, {SourceID: "s2", Ref: "oce-cs-2"}}
	cases := []struct {
		name     string
		statuses []AttachmentStatus
		ready    bool
		fail     bool
	}{
		{"all ready", []AttachmentStatus{{Ref: "oce-cs-1", State: AttachmentReady}, {Ref: "oce-cs-2", State: AttachmentReady}}, true, false},
		{"one pending", []AttachmentStatus{{Ref: "oce-cs-1", State: AttachmentReady}, {Ref: "oce-cs-2", State: AttachmentPending}}, false, false},
		{"one missing", []AttachmentStatus{{Ref: "oce-cs-1", State: AttachmentReady}}, false, false},
		{"failed", []AttachmentStatus{{Ref: "oce-cs-1", State: AttachmentFailed}, {Ref: "oce-cs-2", State: AttachmentReady}}, false, true},
		{"withheld", []AttachmentStatus{{Ref: "oce-cs-1", State: AttachmentReady}, {Ref: "oce-cs-2", State: AttachmentWithheld}}, false, true},
		{"revoked", []AttachmentStatus{{Ref: "oce-cs-1", State: AttachmentRevoked}}, false, true},
		{"absent", []AttachmentStatus{{Ref: "oce-cs-2", State: AttachmentAbsent}}, false, true},
	}
	for _, tc := range cases {
		ready, err := EvaluateAttachments(want, tc.statuses)
		if ready != tc.ready || (err != nil) != tc.fail {
			t.Errorf("%s: ready=%v err=%v; want ready=%v fail=%v", tc.name, ready, err, tc.ready, tc.fail)
		}
		if err != nil && (!HasCode(err, CodeCredentialAttachmentFailed) || !errorsHasPrefix(err, AttachmentGateMessage)) {
			t.Errorf("%s: error %q lacks the seed sentence or code", tc.name, err)
		}
	}
	if ready, err := EvaluateAttachments(nil, nil); !ready || err != nil {
		t.Errorf("no attachments: ready=%v err=%v; want ready", ready, err)
	}
}

func errorsHasPrefix(err error, p string) bool {
	return len(err.Error()) >= len(p) && err.Error()[:len(p)] == p
}

// A reference returned for another revision must never be waited on.
func TestSandboxResourceRefVerifyFor(t *testing.T) {
	rev := Revision{AgentID: "agent-1", ID: "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31"}
	ref := SandboxResourceRef{NamespaceName: "oce-abc", ResourceName: "sb-x", AgentID: "agent-1", RevisionID: rev.ID}
	if err := ref.VerifyFor("oce-abc", rev); err != nil {
		t.Fatal(err)
	}
	other := ref
	other.RevisionID = "rev_00000000-0000-0000-0000-000000000001"
	if err := other.VerifyFor("oce-abc", rev); err == nil {
		t.Fatal("accepted a ref of another revision")
	}
	if err := ref.VerifyFor("oce-other", rev); err == nil {
		t.Fatal("accepted a ref in another namespace")
	}
}

// Codes survive wrapping so Compute can record them in deployment status.
func TestErrorCodeThroughWrapping(t *testing.T) {
	base := &Error{Code: CodeAdmissionLimitReached, Message: "limit", Retryable: true, Err: errors.New("cause")}
	wrapped := fmt.Errorf("provision: %w", base)
	if CodeOf(wrapped) != CodeAdmissionLimitReached || !IsRetryable(wrapped) || base.Error() != "limit (cause)" {
		t.Fatalf("code=%q retryable=%v msg=%q", CodeOf(wrapped), IsRetryable(wrapped), base.Error())
	}
	if CodeOf(errors.New("plain")) != "" || HasCode(nil, "") {
		t.Fatal("plain error has a code")
	}
}
