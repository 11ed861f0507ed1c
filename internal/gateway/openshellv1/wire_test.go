package openshellv1

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// The numbers and types below are the wire of the pinned Gateway, OpenShell v0.1.3-pre.2: the
// minimal subset a client must declare, plus every other field of the pre.2 wire this client
// declares. This test keeps an edit of the .proto files from silently changing the wire.
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
		"SandboxResponse":         {{"sandbox", 1, msg}, {"service_urls", 2, msg}},
		"Sandbox":                 {{"metadata", 1, msg}, {"spec", 2, msg}, {"status", 3, msg}},
		"SandboxStatus":           {{"conditions", 5, msg}, {"phase", 6, enum}, {"exit_code", 9, i32}},
		"SandboxCondition":        {{"type", 1, str}, {"status", 2, str}, {"reason", 3, str}, {"message", 4, str}, {"transition_time", 105, msg}},
		"GetSandboxRequest":       {{"name", 1, str}, {"workspace_scope", 2, msg}},
		"DeleteSandboxRequest":    {{"name", 1, str}, {"workspace_scope", 2, msg}, {"allow_missing", 3, b}, {"request_id", 4, str}},
		"DeleteSandboxResponse":   {{"outcome", 2, enum}, {"sandbox_id", 3, str}},
		"GetServiceRequest":       {{"sandbox", 1, str}, {"name", 2, str}, {"workspace_scope", 3, msg}},
		"ServiceEndpointResponse": {{"endpoint", 1, msg}, {"url", 2, str}},
		"ServiceEndpoint": {{"metadata", 1, msg}, {"sandbox_id", 2, str}, {"sandbox", 3, str}, {"name", 4, str}, {"target_port", 5, u32},
			{"domain", 6, b}, {"authorization_mode", 7, enum}},
		"GetSandboxProviderStatusRequest": {{"sandbox", 1, str}, {"provider", 2, str}, {"receipt_id", 3, str}, {"workspace_scope", 4, msg}},
		"ProviderReadinessStatus":         {{"receipt", 1, msg}, {"state", 2, enum}, {"reason", 3, enum}, {"network_instance_id", 5, str}},
		"ProviderMutationReceipt":         {{"receipt_id", 1, str}, {"mutation_id", 2, str}, {"provider", 3, str}, {"workspace", 4, str}, {"kind", 5, enum}},
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
		"ProviderProfileCredential": {{"name", 1, str}, {"description", 2, str}, {"env_vars", 3, str}, {"required", 4, b}, {"auth_style", 5, str},
			{"header_name", 6, str}, {"query_param", 7, str}, {"refresh", 8, msg}, {"path_template", 9, str}},
		"ProviderCredentialRefresh": {{"strategy", 1, enum}, {"token_url", 2, str}, {"scopes", 3, str}, {"material", 6, msg},
			{"additional_outputs", 7, msg}, {"refresh_before", 104, msg}, {"max_lifetime", 105, msg}},
		"ProviderCredentialRefreshMaterial": {{"name", 1, str}, {"description", 2, str}, {"required", 3, b}, {"secret", 4, b}},
		"ProviderCredentialRefreshOutput":   {{"output", 1, str}, {"credential", 2, str}},
		"ProviderCredentialRefreshStatus": {{"provider", 1, str}, {"provider_id", 2, str}, {"credential_key", 3, str}, {"strategy", 4, enum},
			{"status", 5, str}, {"last_error", 9, str}, {"recovery_action", 10, enum}, {"failure_code", 11, str}, {"provider_error_subtype", 12, str},
			{"expiration_time", 106, msg}, {"next_refresh_time", 107, msg}, {"last_refresh_time", 108, msg}, {"last_error_time", 113, msg}},
		"GetProviderRefreshStatusRequest": {{"provider", 1, str}, {"credential_key", 2, str}, {"workspace_scope", 3, msg}},
		"ConfigureProviderRefreshRequest": {{"provider", 1, str}, {"credential_key", 2, str}, {"strategy", 3, enum}, {"material", 4, msg},
			{"secret_material_keys", 5, str}, {"workspace_scope", 7, msg}, {"request_id", 8, str}, {"expiration_time", 106, msg}},
		"RotateProviderCredentialRequest": {{"provider", 1, str}, {"credential_key", 2, str}, {"workspace_scope", 3, msg}, {"request_id", 4, str}},
		"DeleteProviderRefreshRequest":    {{"provider", 1, str}, {"credential_key", 2, str}, {"workspace_scope", 4, msg}, {"allow_missing", 5, b}, {"request_id", 6, str}},
		"ProviderProfileFile":             {{"path", 1, str}, {"content", 2, str}, {"env_var", 3, str}},
		"GetSandboxLogsRequest":           {{"sandbox", 1, str}, {"lines", 2, u32}, {"sources", 4, str}, {"min_level", 5, str}, {"workspace_scope", 6, msg}, {"since_time", 103, msg}},
		"GetSandboxLogsResponse":          {{"logs", 1, msg}, {"buffer_total", 2, u32}},
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

// The pinned Gateway is OpenShell v0.1.3-pre.2 (upstream commit 021400be8af4), whose wire
// adds these fields to v0.1.3-pre.1's. occ's client depends on them, so the .proto files must
// keep each at pre.2's number, type and cardinality; a description of the pre.1 wire fails here.
func TestWireIsPre2(t *testing.T) {
	type f struct {
		msg, name string
		num       protoreflect.FieldNumber
		kind      protoreflect.Kind
		// typ is the full name of the field's message or enum type ("" for scalars).
		typ      protoreflect.FullName
		repeated bool
	}
	msg, str, b, enum := protoreflect.MessageKind, protoreflect.StringKind, protoreflect.BoolKind, protoreflect.EnumKind
	pre2 := []f{
		// GetService: the client refuses an endpoint without an explicit authorization mode.
		{"ServiceEndpoint", "authorization_mode", 7, enum, "openshell.v1.ServiceAuthorizationMode", false},
		{"ServiceEndpoint", "domain", 6, b, "", false},
		// Provider profiles carry the runtime files the driver renders.
		{"ProviderProfile", "files", 14, msg, "openshell.v1.ProviderProfileFile", true},
		{"ProviderProfileFile", "path", 1, str, "", false},
		{"ProviderProfileFile", "content", 2, str, "", false},
		{"ProviderProfileFile", "env_var", 3, str, "", false},
		{"ProviderProfileCredential", "refresh", 8, msg, "openshell.v1.ProviderCredentialRefresh", false},
		// Network endpoints bind credentials.
		{"NetworkEndpoint", "websocket_credential_rewrite", 16, b, "", false},
		{"NetworkEndpoint", "credential_binding", 24, msg, "openshell.v1.NetworkCredentialBinding", false},
		{"NetworkCredentialBinding", "provider", 1, str, "", false},
		// The driver compares a colliding sandbox's spec and fences provider updates.
		{"Sandbox", "spec", 2, msg, "openshell.v1.SandboxSpec", false},
		{"ObjectMeta", "resource_version", 5, protoreflect.Uint64Kind, "", false},
		{"Provider", "credential_expiration_times", 105, msg, "", false},
		{"UpdateProviderRequest", "credential_expiration_times", 102, msg, "", false},
		// DeleteSandbox reports its outcome and the id it targeted.
		{"DeleteSandboxResponse", "outcome", 2, enum, "openshell.v1.DeletionOutcome", false},
		{"DeleteSandboxResponse", "sandbox_id", 3, str, "", false},
	}
	for _, w := range pre2 {
		fd := lookup(t, w.msg).Fields().ByName(protoreflect.Name(w.name))
		if fd == nil {
			t.Errorf("%s.%s (pre.2 number %d) is not declared: the .proto files describe an older wire", w.msg, w.name, w.num)
			continue
		}
		var typ protoreflect.FullName
		switch {
		case fd.Message() != nil && !fd.IsMap():
			typ = fd.Message().FullName()
		case fd.Enum() != nil:
			typ = fd.Enum().FullName()
		}
		if fd.Number() != w.num || fd.Kind() != w.kind || typ != w.typ || fd.IsList() != w.repeated {
			t.Errorf("%s.%s = %d %v %s (repeated %v), want pre.2's %d %v %s (repeated %v)",
				w.msg, w.name, fd.Number(), fd.Kind(), typ, fd.IsList(), w.num, w.kind, w.typ, w.repeated)
		}
	}
	// Both credential-expiration maps hold Timestamps keyed by credential name.
	for _, m := range []struct{ msg, field string }{{"Provider", "credential_expiration_times"}, {"UpdateProviderRequest", "credential_expiration_times"}} {
		fd := lookup(t, m.msg).Fields().ByName(protoreflect.Name(m.field))
		if fd == nil || !fd.IsMap() || fd.MapKey().Kind() != str || fd.MapValue().Message() == nil ||
			fd.MapValue().Message().FullName() != "google.protobuf.Timestamp" {
			t.Errorf("%s.%s is not a map<string, google.protobuf.Timestamp>", m.msg, m.field)
		}
	}
	// The Credential Gateway's refresh RPCs are part of the pre.2 service.
	sd := File_openshell_proto.Services().ByName("OpenShell")
	for _, m := range []string{"GetProviderRefreshStatus", "ConfigureProviderRefresh", "RotateProviderCredential", "DeleteProviderRefresh"} {
		if sd.Methods().ByName(protoreflect.Name(m)) == nil {
			t.Errorf("pre.2 method %s is missing", m)
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
