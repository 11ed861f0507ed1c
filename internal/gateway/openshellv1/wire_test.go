package openshellv1

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// The numbers and types below are the minimal subset WIRE-v0.1.md §10 says a client must
// declare. This test keeps an edit of the .proto files from silently changing the wire.
func TestWireSubset(t *testing.T) {
	type f struct {
		name string
		num  protoreflect.FieldNumber
		kind protoreflect.Kind
	}
	msg, str, b, u32, u64, i32, enum := protoreflect.MessageKind, protoreflect.StringKind, protoreflect.BoolKind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Int32Kind, protoreflect.EnumKind
	want := map[string][]f{
		"WorkspaceSelector":       {{"workspace", 1, str}, {"all_workspaces", 2, msg}},
		"ObjectMeta":              {{"id", 1, str}, {"name", 2, str}, {"labels", 4, msg}, {"resource_version", 5, u64}, {"annotations", 6, msg}, {"workspace", 7, str}},
		"HealthResponse":          {{"status", 1, enum}, {"version", 2, str}},
		"Workspace":               {{"metadata", 1, msg}, {"status", 2, msg}},
		"WorkspaceStatus":         {{"phase", 1, enum}},
		"CreateWorkspaceRequest":  {{"name", 1, str}, {"labels", 2, msg}, {"request_id", 3, str}},
		"DeleteWorkspaceRequest":  {{"name", 1, str}, {"allow_missing", 2, b}, {"request_id", 3, str}},
		"DeleteWorkspaceResponse": {{"outcome", 2, enum}},
		"CreateSandboxRequest": {{"spec", 1, msg}, {"name", 2, str}, {"labels", 3, msg}, {"annotations", 4, msg},
			{"workspace_scope", 7, msg}, {"request_id", 8, str}, {"service_exposures", 9, msg}},
		"SandboxServiceExposure": {{"service", 1, str}, {"target_port", 2, u32}, {"authorization_mode", 3, enum}},
		"SandboxSpec":            {{"log_level", 1, str}, {"environment", 5, msg}, {"template", 6, msg}, {"policy", 7, msg}, {"providers", 8, str}, {"command", 12, str}},
		"SandboxTemplate":        {{"image", 1, str}, {"runtime_class_name", 2, str}, {"labels", 4, msg}, {"user_namespaces", 10, b}, {"driver_config", 11, msg}},
		"SandboxPolicy":          {{"version", 1, u32}, {"filesystem", 2, msg}, {"landlock", 3, msg}, {"process", 4, msg}, {"network_policies", 5, msg}},
		"LandlockPolicy":         {{"compatibility", 1, str}},
		"NetworkPolicyRule":      {{"name", 1, str}, {"endpoints", 2, msg}, {"binaries", 3, msg}},
		"NetworkBinary":          {{"path", 1, str}},
		"NetworkEndpoint": {{"host", 1, str}, {"port", 2, u32}, {"protocol", 3, str}, {"tls", 4, enum}, {"enforcement", 5, enum},
			{"access", 6, enum}, {"ports", 9, u32}, {"path", 15, str}, {"websocket_credential_rewrite", 16, b}, {"credential_binding", 24, msg}},
		"SandboxResponse":                 {{"sandbox", 1, msg}, {"service_urls", 2, msg}},
		"Sandbox":                         {{"metadata", 1, msg}, {"spec", 2, msg}, {"status", 3, msg}},
		"SandboxStatus":                   {{"conditions", 5, msg}, {"phase", 6, enum}, {"exit_code", 9, i32}},
		"SandboxCondition":                {{"type", 1, str}, {"status", 2, str}, {"reason", 3, str}, {"message", 4, str}, {"transition_time", 105, msg}},
		"GetSandboxRequest":               {{"name", 1, str}, {"workspace_scope", 2, msg}},
		"DeleteSandboxRequest":            {{"name", 1, str}, {"workspace_scope", 2, msg}, {"allow_missing", 3, b}, {"request_id", 4, str}},
		"DeleteSandboxResponse":           {{"outcome", 2, enum}, {"sandbox_id", 3, str}},
		"GetServiceRequest":               {{"sandbox", 1, str}, {"name", 2, str}, {"workspace_scope", 3, msg}},
		"ServiceEndpointResponse":         {{"endpoint", 1, msg}, {"url", 2, str}},
		"ServiceEndpoint":                 {{"sandbox", 3, str}, {"name", 4, str}, {"target_port", 5, u32}, {"authorization_mode", 7, enum}},
		"GetSandboxProviderStatusRequest": {{"sandbox", 1, str}, {"provider", 2, str}, {"receipt_id", 3, str}, {"workspace_scope", 4, msg}},
		"ProviderReadinessStatus":         {{"receipt", 1, msg}, {"state", 2, enum}, {"reason", 3, enum}},
		"ProviderMutationReceipt":         {{"receipt_id", 1, str}, {"kind", 5, enum}},
		"Provider": {{"metadata", 1, msg}, {"type", 2, str}, {"credentials", 3, msg}, {"config", 4, msg}, {"profile_workspace", 6, str},
			{"credential_expiration_times", 105, msg}},
		"CreateProviderRequest":          {{"provider", 1, msg}, {"workspace_scope", 2, msg}, {"request_id", 3, str}},
		"ProviderResponse":               {{"provider", 1, msg}, {"mutation_id", 3, str}},
		"GetProviderRequest":             {{"name", 1, str}, {"workspace_scope", 2, msg}},
		"ListProvidersRequest":           {{"page_size", 1, i32}, {"page_token", 2, str}, {"workspace_scope", 3, msg}},
		"ListProvidersResponse":          {{"providers", 1, msg}, {"next_page_token", 2, str}},
		"UpdateProviderRequest":          {{"provider", 1, msg}, {"workspace_scope", 3, msg}, {"request_id", 4, str}, {"credential_expiration_times", 102, msg}},
		"DeleteProviderRequest":          {{"name", 1, str}, {"workspace_scope", 3, msg}, {"allow_missing", 4, b}, {"request_id", 5, str}},
		"DetachSandboxProviderRequest":   {{"sandbox", 1, str}, {"provider", 2, str}, {"workspace_scope", 4, msg}, {"request_id", 5, str}},
		"DetachSandboxProviderResponse":  {{"detached", 2, b}, {"receipt", 3, msg}},
		"GetProviderProfileRequest":      {{"id", 1, str}, {"workspace_scope", 2, msg}},
		"ImportProviderProfilesRequest":  {{"profiles", 1, msg}, {"workspace_scope", 2, msg}, {"request_id", 3, str}},
		"ProviderProfileImportItem":      {{"profile", 1, msg}, {"source", 2, str}},
		"UpdateProviderProfilesRequest":  {{"profile", 1, msg}, {"expected_resource_version", 2, u64}, {"id", 3, str}, {"workspace_scope", 4, msg}, {"request_id", 5, str}},
		"DeleteProviderProfileRequest":   {{"id", 1, str}, {"workspace_scope", 2, msg}, {"allow_missing", 3, b}, {"request_id", 4, str}},
		"ImportProviderProfilesResponse": {{"diagnostics", 1, msg}, {"imported", 3, b}},
		"UpdateProviderProfilesResponse": {{"diagnostics", 1, msg}, {"updated", 3, b}},
		"ProviderProfileDiagnostic":      {{"field", 3, str}, {"message", 4, str}, {"severity", 5, str}},
		"ProviderProfile": {{"id", 1, str}, {"display_name", 2, str}, {"category", 4, enum}, {"credentials", 5, msg}, {"endpoints", 6, msg},
			{"binaries", 7, msg}, {"inference_capable", 8, b}, {"resource_version", 10, u64}, {"annotations", 11, msg}, {"files", 14, msg}},
		"ProviderProfileCredential": {{"name", 1, str}, {"env_vars", 3, str}, {"required", 4, b}, {"auth_style", 5, str}, {"header_name", 6, str}, {"refresh", 8, msg}},
		"ProviderProfileFile":       {{"path", 1, str}, {"content", 2, str}, {"env_var", 3, str}},
		"GetSandboxLogsRequest":     {{"sandbox", 1, str}, {"lines", 2, u32}, {"sources", 4, str}, {"min_level", 5, str}, {"workspace_scope", 6, msg}, {"since_time", 103, msg}},
		"GetSandboxLogsResponse":    {{"logs", 1, msg}, {"buffer_total", 2, u32}},
		"SandboxLogLine": {{"sandbox_id", 1, str}, {"level", 3, str}, {"target", 4, str}, {"message", 5, str}, {"source", 6, str},
			{"fields", 7, msg}, {"event_time", 102, msg}},
	}
	// Time fields are google.protobuf.Timestamp, never a string or an integer.
	timestamps := map[string]string{
		"SandboxCondition": "transition_time", "GetSandboxLogsRequest": "since_time", "SandboxLogLine": "event_time",
	}
	for name, field := range timestamps {
		fd := lookup(t, name).Fields().ByName(protoreflect.Name(field))
		if fd == nil || fd.Message() == nil || fd.Message().FullName() != "google.protobuf.Timestamp" {
			t.Errorf("%s.%s is not a google.protobuf.Timestamp", name, field)
		}
	}
	for name, fields := range want {
		md := lookup(t, name)
		for _, w := range fields {
			fd := md.Fields().ByName(protoreflect.Name(w.name))
			if fd == nil {
				t.Errorf("%s.%s is not declared", name, w.name)
				continue
			}
			if fd.Number() != w.num || fd.Kind() != w.kind {
				t.Errorf("%s.%s = %d %v, want %d %v", name, w.name, fd.Number(), fd.Kind(), w.num, w.kind)
			}
		}
	}
}

// Numbers upstream reserved in v0.1 are reserved here too and never declared.
func TestWireReserved(t *testing.T) {
	reserved := map[string][]protoreflect.FieldNumber{
		"DeleteWorkspaceResponse":       {1},
		"DeleteSandboxResponse":         {1},
		"DeleteProviderResponse":        {1},
		"DeleteProviderProfileResponse": {1},
		"DeleteProviderRefreshResponse": {1},
		"NetworkBinary":                 {2},
		"Provider":                      {5},
		"UpdateProviderRequest":         {2},
		"GetSandboxLogsRequest":         {3},
		"SandboxLogLine":                {2},
		"ObjectMeta":                    {3, 8},
		// v0.0.x sent last_transition_time as a string at 5; v0.1 has transition_time = 105.
		"SandboxCondition": {5},
	}
	for name, nums := range reserved {
		md := lookup(t, name)
		for _, n := range nums {
			if !md.ReservedRanges().Has(n) {
				t.Errorf("%s: number %d is not reserved", name, n)
			}
			if md.Fields().ByNumber(n) != nil {
				t.Errorf("%s: reserved number %d is declared", name, n)
			}
		}
	}
	// CreateSandboxRequest 5 was the v0.0.x string workspace: it must never be sent.
	if lookup(t, "CreateSandboxRequest").Fields().ByNumber(5) != nil {
		t.Error("CreateSandboxRequest declares number 5")
	}
}

// Every method path is /openshell.v1.OpenShell/<Method>.
func TestServicePaths(t *testing.T) {
	sd := File_openshell_proto.Services().ByName("OpenShell")
	if sd == nil || sd.FullName() != "openshell.v1.OpenShell" {
		t.Fatalf("service = %v", sd)
	}
	for _, m := range []string{"Health", "GetWorkspace", "CreateWorkspace", "DeleteWorkspace", "CreateSandbox", "GetSandbox", "DeleteSandbox",
		"GetService", "GetSandboxProviderStatus", "DetachSandboxProvider", "CreateProvider", "GetProvider", "ListProviders", "UpdateProvider",
		"DeleteProvider", "GetProviderProfile", "ImportProviderProfiles", "UpdateProviderProfiles", "DeleteProviderProfile", "GetSandboxLogs"} {
		if sd.Methods().ByName(protoreflect.Name(m)) == nil {
			t.Errorf("method %s is missing", m)
		}
	}
	if OpenShell_CreateSandbox_FullMethodName != "/openshell.v1.OpenShell/CreateSandbox" {
		t.Errorf("path = %s", OpenShell_CreateSandbox_FullMethodName)
	}
}

func lookup(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName("openshell.v1." + name))
	if err != nil {
		t.Fatalf("message %s: %v", name, err)
	}
	return d.(protoreflect.MessageDescriptor)
}
