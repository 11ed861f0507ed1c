package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/types"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// DefaultWorkspace is the workspace every gateway has and that cannot be deleted.
const DefaultWorkspace = "default"

// state is the emulated gateway database. Server.mu guards it.
type state struct {
	workspaces map[string]*workspaceRec
	sandboxes  map[string]map[string]*sandboxRec // workspace → name
	providers  map[string]map[string]*providerRec
	profiles   map[profileKey]*pb.ProviderProfile
	refresh    map[refreshKey]*pb.ProviderCredentialRefreshStatus
	receipts   map[string]*receiptRec
	readiness  map[attachmentKey]pb.ProviderReadinessReason
	desired    map[attachmentKey]uint64 // desired-state generation per attachment
	admissions map[admissionKey]*admission
	logs       map[string]*logRing // sandbox id → ring
	keyGen     int                 // replay fingerprint key generation
}

type workspaceRec struct {
	meta  *pb.ObjectMeta
	phase pb.WorkspacePhase
}

type sandboxRec struct {
	meta     *pb.ObjectMeta
	spec     *pb.SandboxSpec
	services map[string]*serviceRec
	deleting bool
	// pinned, when set by a test, overrides the phase derived from the Pod.
	pinned   pb.SandboxPhase
	exitCode *int32
	podUID   types.UID
}

type serviceRec struct {
	meta *pb.ObjectMeta
	name string
	port uint32
	mode pb.ServiceAuthorizationMode
}

type providerRec struct {
	p *pb.Provider // with the real credential values; redact before answering
}

type profileKey struct{ scope, id string }

type refreshKey struct{ workspace, provider, credential string }

type attachmentKey struct{ workspace, sandboxID, provider string }

type receiptRec struct {
	receipt   *pb.ProviderMutationReceipt
	sandboxID string
	gen       uint64
	// attached is whether the provider was attached when an OBSERVE receipt was recorded.
	attached bool
}

func newState(now time.Time) *state {
	st := &state{
		workspaces: map[string]*workspaceRec{},
		sandboxes:  map[string]map[string]*sandboxRec{},
		providers:  map[string]map[string]*providerRec{},
		profiles:   map[profileKey]*pb.ProviderProfile{},
		refresh:    map[refreshKey]*pb.ProviderCredentialRefreshStatus{},
		receipts:   map[string]*receiptRec{},
		readiness:  map[attachmentKey]pb.ProviderReadinessReason{},
		desired:    map[attachmentKey]uint64{},
		admissions: map[admissionKey]*admission{},
		logs:       map[string]*logRing{},
	}
	st.workspaces[DefaultWorkspace] = &workspaceRec{
		meta:  newMeta(DefaultWorkspace, "", nil, now),
		phase: pb.WorkspacePhase_WORKSPACE_PHASE_ACTIVE,
	}
	return st
}

func newMeta(name, workspace string, labels map[string]string, now time.Time) *pb.ObjectMeta {
	return &pb.ObjectMeta{
		Id:              uuid.NewString(),
		Name:            name,
		Labels:          cloneMap(labels),
		ResourceVersion: 1,
		Workspace:       workspace,
		CreatedTime:     timestamppb.New(now),
	}
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func clone[T proto.Message](m T) T { return proto.Clone(m).(T) }

func (w *workspaceRec) proto() *pb.Workspace {
	return &pb.Workspace{Metadata: clone(w.meta), Status: &pb.WorkspaceStatus{Phase: w.phase}}
}

// principalFor names the caller holding a bearer token without keeping the token itself.
func principalFor(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "bearer:" + hex.EncodeToString(sum[:8])
}

// counts of what a workspace still contains, for DeleteWorkspace.
func (st *state) contents(ws string) []string {
	var out []string
	add := func(n int, what string) {
		if n > 0 {
			out = append(out, plural(n, what))
		}
	}
	sandboxes := st.sandboxes[ws]
	add(len(sandboxes), "sandbox")
	services := 0
	for _, sb := range sandboxes {
		services += len(sb.services)
	}
	add(services, "service")
	add(len(st.providers[ws]), "provider")
	profiles := 0
	for k := range st.profiles {
		if k.scope == ws {
			profiles++
		}
	}
	add(profiles, "provider profile")
	refresh := 0
	for k := range st.refresh {
		if k.workspace == ws {
			refresh++
		}
	}
	add(refresh, "refresh state")
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if what == "sandbox" {
		return itoa(n) + " sandboxes"
	}
	return itoa(n) + " " + what + "s"
}
