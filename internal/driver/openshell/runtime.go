package openshell

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// The Harness runtime provider delivers a revision's plugin-runtime files to its Sandbox. The
// files are configuration, not secrets, but they are large and revision-specific, so they travel
// as provider config rendered into files by a shared, OCC-managed provider profile instead of
// as literal Sandbox environment.
const (
	// RuntimeProfileCodex is the provider profile (and provider type) of dedicated Codex's
	// runtime files, including its workspace-node enrollment files. Native OpenClaw never
	// receives the Codex files; it has a runtime provider only when it enrolls a workspace node
	// (RuntimeProfileOpenClaw, see nodeenroll.go).
	RuntimeProfileCodex = "oce-codex-runtime"
	// RuntimeProviderPrefix starts every per-revision runtime provider name.
	RuntimeProviderPrefix = contract.RuntimeProviderPrefix

	// annotationProfileManagedBy carries "openclaw-enterprise:" and the SHA-256 of the profile
	// content. Ownership and content identity share one entry so a gateway that hashes maps
	// without canonical ordering cannot see a change where there is none.
	annotationProfileManagedBy = contract.AnnotationManagedBy
	managedProfilePrefix       = driver.ManagedByValue + ":"
	// profileSource labels the profiles OCC imports, as the reference client does.
	profileSource = driver.ManagedByValue

	configRuntimeJSON = "runtime_json"
	configConfigTOML  = "config_toml"

	msgRuntimeProviderConflict = "The Harness runtime provider conflicts with another requested provider."
)

// runtimeProfileIDs are every runtime profile this driver manages, for Namespace cleanup.
var runtimeProfileIDs = []string{RuntimeProfileCodex, RuntimeProfileOpenClaw}

// RuntimeProviderName is the runtime provider of a revision: oce-runtime- and the first 16 hex
// digits of SHA-256(revision ID). Deriving it lets cleanup find the provider without any record.
func RuntimeProviderName(revisionID string) string {
	return RuntimeProviderPrefix + sha256Hex(revisionID)[:16]
}

// runtimeFile is one file the profile renders from provider config.
type runtimeFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	EnvVar  string `json:"env_var"`
}

// runtimeProfileContent is everything a runtime profile says, in a fixed JSON form whose
// SHA-256 is the content digest in the managed-by annotation.
type runtimeProfileContent struct {
	ID               string        `json:"id"`
	DisplayName      string        `json:"display_name"`
	Description      string        `json:"description"`
	Category         string        `json:"category"`
	InferenceCapable bool          `json:"inference_capable"`
	Files            []runtimeFile `json:"files"`
}

// codexRuntimeProfile is the Codex runtime profile: no credentials, endpoints or binaries, not
// inference-capable; runtime.json and config.toml rendered from the provider's config, each
// exposed to the Harness through the variable the Deployment-shaped Harness reads, plus the
// workspace-node enrollment files (empty for a revision that does not enroll). Adding those
// files changed the content digest, so profiles imported before are replaced once by the
// fenced update in ensureRuntimeProfile.
func codexRuntimeProfile() runtimeProfileContent {
	return runtimeProfileContent{
		ID:          RuntimeProfileCodex,
		DisplayName: "OpenClaw Enterprise Codex runtime",
		Description: "Plugin-runtime files of one dedicated Codex Agent revision.",
		Category:    openshellv1.ProviderProfileCategory_PROVIDER_PROFILE_CATEGORY_OTHER.String(),
		Files: append([]runtimeFile{
			{Path: "runtime.json", Content: "{{config." + configRuntimeJSON + "}}", EnvVar: envRuntimeManifest},
			{Path: "config.toml", Content: "{{config." + configConfigTOML + "}}", EnvVar: envCodexConfigTOML},
		}, nodeEnrollmentFiles()...),
	}
}

// annotation is the managed-by value: the prefix and the SHA-256 of the content's JSON.
func (c runtimeProfileContent) annotation() string {
	raw, err := json.Marshal(c)
	if err != nil {
		// A struct of strings and a bool always encodes.
		panic(fmt.Sprintf("encode runtime profile %s: %v", c.ID, err))
	}
	return managedProfilePrefix + sha256Hex(string(raw))
}

// wire is the profile as imported, carrying its managed-by annotation.
func (c runtimeProfileContent) wire() *openshellv1.ProviderProfile {
	p := c.unannotated()
	p.Annotations = map[string]string{annotationProfileManagedBy: c.annotation()}
	return p
}

func (c runtimeProfileContent) unannotated() *openshellv1.ProviderProfile {
	p := &openshellv1.ProviderProfile{
		Id:               c.ID,
		DisplayName:      c.DisplayName,
		Description:      c.Description,
		Category:         openshellv1.ProviderProfileCategory(openshellv1.ProviderProfileCategory_value[c.Category]),
		InferenceCapable: c.InferenceCapable,
	}
	for _, f := range c.Files {
		p.Files = append(p.Files, &openshellv1.ProviderProfileFile{Path: f.Path, Content: f.Content, EnvVar: f.EnvVar})
	}
	return p
}

// runtimeProvider is what provisioning ensures for a revision before its Sandbox.
type runtimeProvider struct {
	profile runtimeProfileContent
	spec    gateway.ProviderSpec
}

// planRuntimeProvider takes the runtime files out of the literal environment (the provider
// supplies those variables now, and the Sandbox must not receive them twice) and describes the
// revision's runtime provider. It returns nil for a Harness without runtime files.
func planRuntimeProvider(env map[string]string, codex bool, workspace string, rev driver.Revision) *runtimeProvider {
	if !codex {
		return nil
	}
	config := map[string]string{configRuntimeJSON: env[envRuntimeManifest], configConfigTOML: env[envCodexConfigTOML]}
	delete(env, envRuntimeManifest)
	delete(env, envCodexConfigTOML)
	profile := codexRuntimeProfile()
	return &runtimeProvider{
		profile: profile,
		spec: gateway.ProviderSpec{
			Name:             RuntimeProviderName(rev.ID),
			Labels:           runtimeProviderLabels(rev),
			Type:             profile.ID,
			Config:           config,
			ProfileWorkspace: workspace,
		},
	}
}

// runtimeProviderLabels are the exact ownership labels of a revision's runtime provider.
func runtimeProviderLabels(rev driver.Revision) map[string]string {
	return map[string]string{
		driver.LabelManagedBy:   driver.ManagedByValue,
		driver.LabelNamespaceID: rev.NamespaceID,
		driver.LabelAgentID:     rev.AgentID,
		driver.LabelRevisionID:  rev.ID,
	}
}

// appendRuntimeProvider puts the runtime provider last in the Sandbox's providers. A static
// provider or attachment of the same name would let someone else's provider stand in for the
// revision's runtime files, so a clash is a refusal.
func appendRuntimeProvider(providers []string, rp *runtimeProvider) ([]string, error) {
	if rp == nil {
		return providers, nil
	}
	if slices.Contains(providers, rp.spec.Name) {
		return nil, plain(msgRuntimeProviderConflict, errorf("provider %s is already requested as a static provider or credential attachment", rp.spec.Name))
	}
	out := append(providers, rp.spec.Name)
	if len(out) > maxProviders {
		return nil, plain("OpenShell accepts at most 32 providers per Sandbox.", errorf("%d providers requested, including the runtime provider", len(out)))
	}
	return out, nil
}

// runtimeState is what the gateway holds of a revision's runtime objects, as read before
// provisioning decides anything; nil means absent.
type runtimeState struct {
	profile  *openshellv1.ProviderProfile
	provider *gateway.Provider
	// refresh is set by check when the provider differs only by an expired workspace-node
	// setup envelope, the one drift provisioning repairs.
	refresh bool
}

// readRuntimeProfile reads the Workspace's runtime profile; NOT_FOUND is (nil, nil).
func (d *Driver) readRuntimeProfile(ctx context.Context, workspace, id string) (*openshellv1.ProviderProfile, error) {
	cur, err := d.gw.GetProviderProfile(ctx, workspace, id)
	switch {
	case gateway.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, gatewayError("GetProviderProfile", fmt.Errorf("runtime provider profile %s in Workspace %s: %w", id, workspace, err))
	}
	return cur, nil
}

// readRuntimeProvider reads the revision's runtime provider; NOT_FOUND is (nil, nil).
func (d *Driver) readRuntimeProvider(ctx context.Context, workspace, name string) (*gateway.Provider, error) {
	cur, err := d.gw.GetProvider(ctx, workspace, name)
	switch {
	case gateway.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, gatewayError("GetProvider", fmt.Errorf("runtime provider %s in Workspace %s: %w", name, workspace, err))
	}
	return cur, nil
}

// check makes every refusal the reads justify, before anything is written: a profile of the
// runtime profile's id that OCC does not manage, and a provider of the revision's name that is
// not exactly the revision's (unless only its setup envelope expired, which marks refresh).
func (rs *runtimeState) check(workspace string, rp *runtimeProvider, now time.Time) error {
	if rs.profile != nil {
		if err := checkManagedProfile(rs.profile, rp.profile.ID, workspace); err != nil {
			return err
		}
	}
	if rs.provider == nil {
		return nil
	}
	err := verifyRuntimeProvider(rs.provider, rp.spec, true)
	if err == nil {
		return nil
	}
	if !setupEnvelopeRefresh(rs.provider, rp.spec, now) {
		return err
	}
	if rs.provider.ResourceVersion == 0 {
		return plain(fmt.Sprintf("Refusing OpenShell provider %s without exact AgentRevision ownership and content.", rp.spec.Name),
			errorf("its expired setup envelope cannot be replaced without the resource version that fences the update"))
	}
	rs.refresh = true
	return nil
}

// checkManagedProfile refuses a profile that lacks OCC's managed-by annotation.
func checkManagedProfile(cur *openshellv1.ProviderProfile, id, workspace string) error {
	annotation := cur.GetAnnotations()[annotationProfileManagedBy]
	if !strings.HasPrefix(annotation, managedProfilePrefix) {
		return plain(fmt.Sprintf("Refusing unmanaged OpenShell provider profile %s.", id),
			errorf("its %s annotation is %q, not %s<sha256>; remove or rename the profile in Workspace %s", annotationProfileManagedBy, annotation, managedProfilePrefix, workspace))
	}
	return nil
}

// ensureRuntime makes the Workspace's runtime profile and the revision's runtime provider exist
// with exactly the wanted content: both are read, checked, and only then written. A repeated
// provision therefore makes no mutating call.
func (d *Driver) ensureRuntime(ctx context.Context, workspace string, rp *runtimeProvider) error {
	if rp == nil {
		return nil
	}
	var rs runtimeState
	var err error
	if rs.profile, err = d.readRuntimeProfile(ctx, workspace, rp.profile.ID); err != nil {
		return err
	}
	if rs.provider, err = d.readRuntimeProvider(ctx, workspace, rp.spec.Name); err != nil {
		return err
	}
	if err := rs.check(workspace, rp, time.Now()); err != nil {
		return err
	}
	return d.applyRuntime(ctx, workspace, rp, &rs)
}

// applyRuntime writes what the checked reads showed missing or stale: the profile first, since
// the provider's type names it, then the provider.
func (d *Driver) applyRuntime(ctx context.Context, workspace string, rp *runtimeProvider, rs *runtimeState) error {
	if rp == nil {
		return nil
	}
	if err := d.applyRuntimeProfile(ctx, workspace, rp.profile, rs.profile); err != nil {
		return err
	}
	switch {
	case rs.refresh:
		return d.refreshSetupEnvelope(ctx, workspace, rs.provider, rp.spec)
	case rs.provider != nil:
		return nil
	}
	return d.createRuntimeProvider(ctx, workspace, rp.spec)
}

// ensureRuntimeProfile reads, checks and applies the runtime profile alone.
func (d *Driver) ensureRuntimeProfile(ctx context.Context, workspace string, want runtimeProfileContent) error {
	cur, err := d.readRuntimeProfile(ctx, workspace, want.ID)
	if err != nil {
		return err
	}
	if cur != nil {
		if err := checkManagedProfile(cur, want.ID, workspace); err != nil {
			return err
		}
	}
	return d.applyRuntimeProfile(ctx, workspace, want, cur)
}

// applyRuntimeProfile imports the profile when the read found none. An existing profile (already
// checked to be OCC-managed) whose content differs (an older driver's profile, or an edited one)
// is replaced, fenced by the version read, so a concurrent change is never undone blindly.
func (d *Driver) applyRuntimeProfile(ctx context.Context, workspace string, want runtimeProfileContent, cur *openshellv1.ProviderProfile) error {
	if cur == nil {
		_, importErr := d.gw.ImportProviderProfiles(ctx, workspace, profileSource, want.wire())
		if importErr == nil {
			d.log.LogAttrs(ctx, slog.LevelDebug, "imported OpenShell runtime provider profile", slog.String("profile", want.ID), slog.String("workspace", workspace))
			return nil
		}
		// A concurrent provision of another revision may have imported it first. Its profile
		// is adopted only if it now exists; it is then checked like any existing one.
		reread, err := d.gw.GetProviderProfile(ctx, workspace, want.ID)
		if err != nil {
			return gatewayError("ImportProviderProfiles", fmt.Errorf("runtime provider profile %s in Workspace %s: %w", want.ID, workspace, importErr))
		}
		if err := checkManagedProfile(reread, want.ID, workspace); err != nil {
			return err
		}
		cur = reread
	}
	if cur.GetAnnotations()[annotationProfileManagedBy] == want.annotation() && profileContentEqual(cur, want) {
		return nil
	}
	_, err := d.gw.UpdateProviderProfile(ctx, gateway.ProfileUpdate{
		Workspace: workspace, ID: want.ID, Source: profileSource, Profile: want.wire(), ExpectedResourceVersion: cur.GetResourceVersion(),
	})
	if err != nil {
		return gatewayError("UpdateProviderProfiles", fmt.Errorf("runtime provider profile %s at version %d in Workspace %s: %w", want.ID, cur.GetResourceVersion(), workspace, err))
	}
	d.log.LogAttrs(ctx, slog.LevelDebug, "updated OpenShell runtime provider profile", slog.String("profile", want.ID), slog.String("workspace", workspace))
	return nil
}

// profileContentEqual compares what a stored profile says with the wanted content, ignoring the
// fields the gateway sets itself (version, source, scope) and the annotation checked apart.
func profileContentEqual(stored *openshellv1.ProviderProfile, want runtimeProfileContent) bool {
	s := proto.Clone(stored).(*openshellv1.ProviderProfile)
	s.ResourceVersion, s.Source, s.Scope, s.Annotations = 0, "", "", nil
	discardUnknown(s.ProtoReflect())
	return proto.Equal(s, want.unannotated())
}

// createRuntimeProvider creates the revision's runtime provider the read found absent. When a
// concurrent provision of the same revision won, the provider is re-read and adopted only when
// its type, labels and config are exactly the revision's and it holds no credentials: anything
// else could feed the Harness another revision's runtime files. The one repairable drift (an
// expired workspace-node setup envelope) is refreshed.
func (d *Driver) createRuntimeProvider(ctx context.Context, workspace string, spec gateway.ProviderSpec) error {
	_, err := d.gw.CreateProvider(ctx, workspace, spec)
	if err == nil {
		d.log.LogAttrs(ctx, slog.LevelDebug, "created OpenShell runtime provider", slog.String("provider", spec.Name), slog.String("workspace", workspace))
		return nil
	}
	if !gateway.IsAlreadyExists(err) {
		return gatewayError("CreateProvider", fmt.Errorf("runtime provider %s in Workspace %s: %w", spec.Name, workspace, err))
	}
	cur, err := d.gw.GetProvider(ctx, workspace, spec.Name)
	if err != nil {
		return gatewayError("GetProvider", fmt.Errorf("runtime provider %s in Workspace %s after a concurrent create: %w", spec.Name, workspace, err))
	}
	err = verifyRuntimeProvider(cur, spec, true)
	if err == nil || !setupEnvelopeRefresh(cur, spec, time.Now()) {
		return err
	}
	return d.refreshSetupEnvelope(ctx, workspace, cur, spec)
}

// refreshSetupEnvelope replaces only node_setup_json of a runtime provider whose stored setup
// envelope expired, fenced by the version just read so a concurrent change is never overwritten.
func (d *Driver) refreshSetupEnvelope(ctx context.Context, workspace string, cur *gateway.Provider, spec gateway.ProviderSpec) error {
	if cur.ResourceVersion == 0 {
		return plain(fmt.Sprintf("Refusing OpenShell provider %s without exact AgentRevision ownership and content.", spec.Name),
			errorf("its expired setup envelope cannot be replaced without the resource version that fences the update"))
	}
	_, err := d.gw.UpdateProvider(ctx, workspace, gateway.ProviderUpdate{
		Name:                    spec.Name,
		ExpectedResourceVersion: cur.ResourceVersion,
		Config:                  map[string]string{configNodeSetupJSON: spec.Config[configNodeSetupJSON]},
	})
	if err != nil {
		return gatewayError("UpdateProvider", fmt.Errorf("refresh the expired workspace node setup envelope of runtime provider %s at version %d in Workspace %s: %w", spec.Name, cur.ResourceVersion, workspace, err))
	}
	d.log.LogAttrs(ctx, slog.LevelDebug, "refreshed expired workspace node setup envelope", slog.String("provider", spec.Name), slog.String("workspace", workspace))
	return nil
}

// verifyRuntimeProvider checks an existing runtime provider against the revision's. With
// content false only ownership (type and labels) is checked, which is what deletion needs. The
// error names the differing part, never a config value.
func verifyRuntimeProvider(cur *gateway.Provider, want gateway.ProviderSpec, content bool) error {
	var what string
	switch {
	case cur.Name != want.Name:
		what = "name"
	case cur.Type != want.Type:
		what = fmt.Sprintf("type %q (want %q)", cur.Type, want.Type)
	case !maps.Equal(cur.Labels, want.Labels):
		what = "labels"
	case !content:
	case len(cur.CredentialKeys) > 0:
		what = "credentials"
	case !maps.Equal(cur.Config, want.Config):
		what = "config"
	case cur.ProfileWorkspace != "" && cur.ProfileWorkspace != want.ProfileWorkspace:
		what = "profile workspace"
	}
	if what == "" {
		return nil
	}
	return plain(fmt.Sprintf("Refusing OpenShell provider %s without exact AgentRevision ownership and content.", want.Name),
		errorf("its %s differs from revision %s's runtime provider", what, want.Labels[driver.LabelRevisionID]))
}

// deleteRuntimeProvider removes a revision's runtime provider after its Sandbox is gone. An
// absent provider is success; one without the revision's exact ownership is left alone.
func (d *Driver) deleteRuntimeProvider(ctx context.Context, workspace string, rev driver.Revision) error {
	profile := RuntimeProfileCodex
	if rev.Harness.ID == driver.HarnessOpenClaw {
		profile = RuntimeProfileOpenClaw
	}
	want := gateway.ProviderSpec{Name: RuntimeProviderName(rev.ID), Type: profile, Labels: runtimeProviderLabels(rev)}
	cur, err := d.gw.GetProvider(ctx, workspace, want.Name)
	if gateway.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return gatewayError("GetProvider", fmt.Errorf("runtime provider %s of revision %s: %w", want.Name, rev.ID, err))
	}
	if err := verifyRuntimeProvider(cur, want, false); err != nil {
		return err
	}
	if _, err := d.gw.DeleteProvider(ctx, workspace, want.Name); err != nil {
		return gatewayError("DeleteProvider", fmt.Errorf("runtime provider %s of revision %s: %w", want.Name, rev.ID, err))
	}
	return nil
}

// deleteRuntimeObjects empties a Workspace of what provisioning added to it before the
// Workspace is deleted: every runtime provider this Namespace owns, then each runtime profile no
// remaining provider uses. A profile OCC does not manage is refused, not deleted.
func (d *Driver) deleteRuntimeObjects(ctx context.Context, workspace, namespaceID string) error {
	providers, err := d.gw.ListProviders(ctx, workspace)
	if err != nil {
		return gatewayError("ListProviders", fmt.Errorf("Workspace %s: %w", workspace, err))
	}
	inUse := map[string]bool{}
	for _, p := range providers {
		if !slices.Contains(runtimeProfileIDs, p.Type) {
			continue
		}
		owned := strings.HasPrefix(p.Name, RuntimeProviderPrefix) && p.Labels[driver.LabelManagedBy] == driver.ManagedByValue &&
			p.Labels[driver.LabelNamespaceID] == namespaceID && p.Labels[driver.LabelRevisionID] != "" && p.Name == RuntimeProviderName(p.Labels[driver.LabelRevisionID])
		if !owned {
			inUse[p.Type] = true
			continue
		}
		if _, err := d.gw.DeleteProvider(ctx, workspace, p.Name); err != nil {
			return gatewayError("DeleteProvider", fmt.Errorf("runtime provider %s in Workspace %s: %w", p.Name, workspace, err))
		}
	}
	for _, id := range runtimeProfileIDs {
		if inUse[id] {
			// Another provider still uses the profile; the Workspace deletion reports it.
			continue
		}
		cur, err := d.gw.GetProviderProfile(ctx, workspace, id)
		if gateway.IsNotFound(err) {
			continue
		}
		if err != nil {
			return gatewayError("GetProviderProfile", fmt.Errorf("runtime provider profile %s in Workspace %s: %w", id, workspace, err))
		}
		if !strings.HasPrefix(cur.GetAnnotations()[annotationProfileManagedBy], managedProfilePrefix) {
			return plain(fmt.Sprintf("Refusing to delete unmanaged OpenShell provider profile %s.", id),
				errorf("it lacks the %s annotation %s<sha256>; remove it by hand if it is not needed", annotationProfileManagedBy, managedProfilePrefix))
		}
		if _, err := d.gw.DeleteProviderProfile(ctx, workspace, id); err != nil {
			return gatewayError("DeleteProviderProfile", fmt.Errorf("runtime provider profile %s in Workspace %s: %w", id, workspace, err))
		}
	}
	return nil
}
