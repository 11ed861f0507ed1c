package gateway

import (
	"maps"
	"regexp"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Translation between the generated messages and the package's Go types. Keeping every
// field-level mapping here means a wire change (a renumbered field, an unconfirmed field that
// turns out different) is fixed in one file.

// MaxNameLength is the gateway's limit for workspace, sandbox and service names: three names
// joined by "--" must fit a 63-character DNS label.
const MaxNameLength = 19

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// checkName refuses a workspace or sandbox name the gateway would refuse, before anything is
// sent.
func checkName(method, field, name string) error {
	if len(name) == 0 || len(name) > MaxNameLength || !dnsLabel.MatchString(name) {
		return &ArgumentError{Method: method, Field: field, Value: name,
			Rule: "must be a DNS-1123 label of 1 to 19 lowercase letters, digits and hyphens"}
	}
	return nil
}

// checkObjectName refuses an empty provider or profile name, or one beyond the 253-character
// limit.
func checkObjectName(method, field, name string) error {
	if name == "" || len(name) > 253 {
		return &ArgumentError{Method: method, Field: field, Value: name, Rule: "must be 1 to 253 characters"}
	}
	return nil
}

// selector names one workspace. The contract accepts only a named workspace on
// single-resource RPCs, so the all-workspaces arm is never sent.
func selector(workspace string) *openshellv1.WorkspaceSelector {
	return &openshellv1.WorkspaceSelector{Selection: &openshellv1.WorkspaceSelector_Workspace{Workspace: workspace}}
}

// optionalSelector is selector for calls where an empty workspace means platform scope.
func optionalSelector(workspace string) *openshellv1.WorkspaceSelector {
	if workspace == "" {
		return nil
	}
	return selector(workspace)
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

func timeOf(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

func timestamps(m map[string]time.Time) map[string]*timestamppb.Timestamp {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*timestamppb.Timestamp, len(m))
	for k, v := range m {
		out[k] = timestamppb.New(v)
	}
	return out
}

func timesOf(m map[string]*timestamppb.Timestamp) map[string]time.Time {
	out := make(map[string]time.Time, len(m))
	for k, v := range m {
		out[k] = timeOf(v)
	}
	return out
}

func metaFromWire(m *openshellv1.ObjectMeta) ObjectMeta {
	return ObjectMeta{
		ID:              m.GetId(),
		Name:            m.GetName(),
		Workspace:       m.GetWorkspace(),
		Labels:          copyMap(m.GetLabels()),
		Annotations:     copyMap(m.GetAnnotations()),
		ResourceVersion: m.GetResourceVersion(),
		CreatedTime:     timeOf(m.GetCreatedTime()),
		DeletionTime:    timeOf(m.GetDeletionTime()),
	}
}

func workspaceFromWire(w *openshellv1.Workspace) *Workspace {
	return &Workspace{ObjectMeta: metaFromWire(w.GetMetadata()), Phase: w.GetStatus().GetPhase()}
}

func sandboxFromWire(s *openshellv1.Sandbox) *Sandbox {
	st := s.GetStatus()
	out := &Sandbox{
		ObjectMeta: metaFromWire(s.GetMetadata()),
		Spec:       s.GetSpec(),
		Phase:      st.GetPhase(),
		AgentPod:   st.GetAgentPod(),
	}
	if st != nil && st.ExitCode != nil {
		code := st.GetExitCode()
		out.ExitCode = &code
	}
	for _, c := range st.GetConditions() {
		out.Conditions = append(out.Conditions, SandboxCondition{
			Type: c.GetType(), Status: c.GetStatus(), Reason: c.GetReason(), Message: c.GetMessage(),
			TransitionTime: timeOf(c.GetTransitionTime()),
		})
	}
	return out
}

func exposuresToWire(in []ServiceExposure) []*openshellv1.SandboxServiceExposure {
	out := make([]*openshellv1.SandboxServiceExposure, 0, len(in))
	for _, e := range in {
		out = append(out, &openshellv1.SandboxServiceExposure{
			Service: e.Service, TargetPort: e.TargetPort, AuthorizationMode: e.AuthorizationMode,
		})
	}
	return out
}

func receiptFromWire(r *openshellv1.ProviderMutationReceipt) *ProviderReceipt {
	if r == nil {
		return nil
	}
	return &ProviderReceipt{
		ReceiptID: r.GetReceiptId(), MutationID: r.GetMutationId(), Provider: r.GetProvider(),
		Workspace: r.GetWorkspace(), Kind: r.GetKind(),
	}
}

// providerFromWire copies everything except credential values: only the keys leave this
// function, so no code path can print a credential the gateway returned.
func providerFromWire(p *openshellv1.Provider, mutationID string) *Provider {
	return &Provider{
		ObjectMeta:                metaFromWire(p.GetMetadata()),
		Type:                      p.GetType(),
		Config:                    copyMap(p.GetConfig()),
		CredentialKeys:            slices.Sorted(maps.Keys(p.GetCredentials())),
		ProfileWorkspace:          p.GetProfileWorkspace(),
		CredentialExpirationTimes: timesOf(p.GetCredentialExpirationTimes()),
		MutationID:                mutationID,
	}
}

func providerSpecToWire(s ProviderSpec) *openshellv1.Provider {
	return &openshellv1.Provider{
		Metadata:                  &openshellv1.ObjectMeta{Name: s.Name, Labels: s.Labels},
		Type:                      s.Type,
		Credentials:               s.Credentials,
		Config:                    s.Config,
		ProfileWorkspace:          s.ProfileWorkspace,
		CredentialExpirationTimes: timestamps(s.CredentialExpirationTimes),
	}
}

func diagnosticsFromWire(in []*openshellv1.ProviderProfileDiagnostic) []ProfileDiagnostic {
	out := make([]ProfileDiagnostic, 0, len(in))
	for _, d := range in {
		out = append(out, ProfileDiagnostic{
			Source: d.GetSource(), ProfileID: d.GetProfileId(), Field: d.GetField(),
			Message: d.GetMessage(), Severity: d.GetSeverity(),
		})
	}
	return out
}

func logLineFromWire(l *openshellv1.SandboxLogLine) LogLine {
	source := l.GetSource()
	if source == "" {
		source = "gateway"
	}
	return LogLine{
		SandboxID: l.GetSandboxId(),
		Time:      timeOf(l.GetEventTime()),
		Level:     l.GetLevel(),
		Target:    l.GetTarget(),
		Message:   l.GetMessage(),
		Source:    source,
		Fields:    copyMap(l.GetFields()),
	}
}
