package emulator

import (
	"strconv"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Limits the gateway enforces on every call.
const (
	maxShortName       = 19 // workspace, sandbox and service names
	maxLongName        = 253
	maxProvidersPerBox = 32
	maxLogLevel        = 32
	maxEnvEntries      = 128
	maxEnvKey          = 256
	maxEnvValue        = 8192
	maxProviderType    = 64
	maxCredentials     = 32
	maxConfigEntries   = 64
	logRingSize        = 2000
)

func itoa(n int) string { return strconv.Itoa(n) }

// validateShortName checks a workspace, sandbox or service name: a DNS-1123 label of at most 19
// characters without "--", because the gateway joins three names with "--" into one label.
func validateShortName(field, kind, name string) error {
	if name == "" {
		return invalidArgument(field, "%s name is required", kind)
	}
	if len(name) > maxShortName {
		return invalidArgument(field, "%s name exceeds maximum length (%d > %d)", kind, len(name), maxShortName)
	}
	if !isDNSLabel(name) {
		return invalidArgument(field, "%s name %q must be a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit", kind, name)
	}
	if strings.Contains(name, "--") {
		return invalidArgument(field, "%s name %q must not contain \"--\"", kind, name)
	}
	return nil
}

func isDNSLabel(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		alnum := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		if !alnum && (r != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

func validateLongName(field, kind, name string) error {
	if name == "" {
		return invalidArgument(field, "%s name is required", kind)
	}
	if len(name) > maxLongName {
		return invalidArgument(field, "%s name exceeds maximum length (%d > %d)", kind, len(name), maxLongName)
	}
	return nil
}

// normalizeRequestID validates a request_id and returns it lower-cased (the gateway compares
// ids case-insensitively). Empty stays empty: no admission.
func normalizeRequestID(field, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 || strings.Count(id, "-") != 4 || u == uuid.Nil {
		return "", invalidArgument(field, MsgRequestIDInvalid)
	}
	return strings.ToLower(id), nil
}

// scopeWorkspace resolves a WorkspaceSelector for a single-resource RPC. An absent selector or
// an empty name means the default workspace.
func scopeWorkspace(field string, sel *pb.WorkspaceSelector) (string, error) {
	if sel == nil {
		return DefaultWorkspace, nil
	}
	switch s := sel.GetSelection().(type) {
	case nil:
		return DefaultWorkspace, nil
	case *pb.WorkspaceSelector_AllWorkspaces:
		return "", invalidArgument(field, "Only a named workspace selection is accepted")
	case *pb.WorkspaceSelector_Workspace:
		if s.Workspace == "" {
			return DefaultWorkspace, nil
		}
		return s.Workspace, nil
	}
	return "", status.Error(codes.Internal, "unknown workspace selection")
}
