package online

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Option names, as the command spells them, for errors about bad settings.
const (
	OptionVersion      = "--openshell"
	OptionCommit       = "--commit"
	OptionAgentSandbox = "--agent-sandbox-version"
)

// ImageOptions are the flags that replace the other image pins, by the key each replaces.
var ImageOptions = map[string]string{
	pins.KeyK3sImage:         "--k3s-image",
	pins.KeyK3dToolsImage:    "--k3d-tools-image",
	pins.KeyOCENodeBaseImage: "--node-base-image",
	pins.KeyOCEPostgresImage: "--postgres-image",
}

// ResolveOptions say which OpenShell release to pin and what else to change.
type ResolveOptions struct {
	// Base is the set the new one starts from (the pins in effect): the archive URL and the
	// image names of the new release follow its pattern, and every other pin is kept from it
	// unless replaced below.
	Base *pins.Set
	// Version is the OpenShell release, with or without a leading v (0.1.5 or v0.1.5).
	Version string
	// Commit is the release's 40-hex commit. It is needed only when the archive does not carry
	// its commit; when both exist they must agree.
	Commit string
	// Images replace other image pins, by key (see ImageOptions). A reference with a digest is
	// checked; one with only a tag is resolved to the digest the tag serves. Either must be a
	// multi-platform index holding every Required platform.
	Images map[string]string
	// AgentSandboxVersion, when set, replaces the Agent Sandbox release: its manifest URL follows
	// the base's pattern and its checksum is computed from the download.
	AgentSandboxVersion string
}

// Resolved is a new pin set and how each of its new values was found.
type Resolved struct {
	Set     *pins.Set `json:"-"`
	Version string    `json:"version"`
	Commit  string    `json:"commit"`
	// CommitSource says where the commit came from: the archive's pax header or --commit.
	CommitSource string          `json:"commitSource"`
	Archive      ResolvedArchive `json:"archive"`
	// Images are the pins that were resolved or checked now, in pin file order.
	Images []ResolvedImage `json:"images"`
	// AgentSandbox is set when the Agent Sandbox manifest was replaced.
	AgentSandbox *ResolvedArtifact `json:"agentSandbox,omitempty"`
	// Kept are the keys of the pins taken unchanged from the base.
	Kept []string `json:"kept"`
	// DroppedNotes are the base's notes about pins that changed: they described the old values.
	DroppedNotes []pins.Note `json:"droppedNotes,omitempty"`
	// Base names the set the new one started from.
	Base string `json:"base"`
	// Routing is set when the routing controllers' images were resolved too.
	Routing *RoutingResolved `json:"routing,omitempty"`
}

// WithRouting takes the routing controllers' images rr resolved from r's set into r.
func (r *Resolved) WithRouting(rr *RoutingResolved) {
	r.Set, r.Routing = rr.Set, rr
	r.Kept = slices.DeleteFunc(r.Kept, func(k string) bool {
		return k == pins.KeyRouting || strings.HasPrefix(k, pins.KeyRouting+".") && strings.HasSuffix(k, ".images")
	})
	r.DroppedNotes = append(r.DroppedNotes, rr.DroppedNotes...)
}

// ResolvedArchive is the source archive of the new release.
type ResolvedArchive struct {
	URL          string `json:"url"`
	SHA256       string `json:"sha256"`
	Size         int64  `json:"size"`
	TopDirectory string `json:"topDirectory"`
}

// ResolvedArtifact is a downloaded file and its checksum.
type ResolvedArtifact struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// ResolvedImage is an image pin with the platforms its index serves.
type ResolvedImage struct {
	Pin       string   `json:"pin"`
	Reference string   `json:"reference"`
	Platforms []string `json:"platforms"`
}

// Resolve derives the complete pin set of another OpenShell release: it streams the release's
// tag archive (URL from the base pin's pattern) through SHA-256, checks that the Gateway and
// Workspace charts are where the base says, reads the release commit from the archive's pax
// header (or takes --commit), and resolves the gateway, sandbox and supervisor images, tagged by
// that commit, to their multi-platform index digests. Bad options are *option.Error; a release
// that cannot be pinned (no archive, charts moved, an image missing or lacking a platform) is
// refused with every reason at once. The result is validated by pins.Parse when encoded.
func Resolve(ctx context.Context, o ResolveOptions, deps Deps) (*Resolved, error) {
	base := o.Base
	version, overrides, err := checkResolveOptions(o)
	if err != nil {
		return nil, err
	}
	archiveURL, err := swapVersion(base.OpenShell.SourceArchive.URL, base.OpenShell.Version, version)
	if err != nil {
		return nil, fmt.Errorf("derive the source archive URL of %s from %s: %w", version, pins.KeySourceArchive, err)
	}
	agent, err := agentSandboxRelease(base, o.AgentSandboxVersion)
	if err != nil {
		return nil, err
	}
	reg, err := newRegistry(deps)
	if err != nil {
		return nil, err
	}
	dl := downloader{transport: deps.transport()}

	facts, err := dl.scanArchive(ctx, archiveURL)
	if err != nil {
		return nil, fmt.Errorf("OpenShell %s: %w; check that the release exists (its tag is v%s)", version, err, version)
	}
	res := &Resolved{Version: version, Base: base.Source,
		Archive: ResolvedArchive{URL: archiveURL, SHA256: facts.SHA256, Size: facts.Size, TopDirectory: facts.TopDirectory}}
	if res.Commit, res.CommitSource, err = releaseCommit(facts, o.Commit, archiveURL); err != nil {
		return nil, err
	}
	if err := checkLayout(facts, base.OpenShell, archiveURL); err != nil {
		return nil, err
	}

	r := newResolution(base, res, facts)
	r.pinReleaseImages(ctx, reg)
	r.pinOverrides(ctx, reg, overrides)
	r.pinAgentSandbox(ctx, dl, agent)
	if len(r.refusals) > 0 {
		return nil, fmt.Errorf("cannot pin OpenShell %s: %w", version, errors.Join(r.refusals...))
	}
	return r.finish(), nil
}

// checkResolveOptions checks the release version, --commit and the image replacements before
// anything is fetched, and returns the version without its v and the parsed replacements.
func checkResolveOptions(o ResolveOptions) (version string, overrides map[string]pins.Image, err error) {
	version = strings.TrimPrefix(o.Version, "v")
	if !pins.ValidVersion(version) {
		return "", nil, &option.Error{Option: OptionVersion, Value: o.Version, Rule: "is not an OpenShell release version", Fix: "give the release like 0.1.5 or v0.1.5 (a tag of NVIDIA/OpenShell)"}
	}
	if o.Commit != "" && !pins.ValidCommit(o.Commit) {
		return "", nil, &option.Error{Option: OptionCommit, Value: o.Commit, Rule: "is not a full commit id", Fix: "give the 40 lower-case hex digits of the commit the release tag points at"}
	}
	if overrides, err = parseOverrides(o.Images); err != nil {
		return "", nil, err
	}
	return version, overrides, nil
}

// agentSandboxManifest is the Agent Sandbox release asked for: its version as the base writes
// it and its manifest URL. The zero value means the base's release is kept.
type agentSandboxManifest struct {
	asked, version, url string
}

// agentSandboxRelease checks the Agent Sandbox release asked for (none when asked is empty) and
// derives its manifest URL from the base's pattern.
func agentSandboxRelease(base *pins.Set, asked string) (agentSandboxManifest, error) {
	if asked == "" {
		return agentSandboxManifest{}, nil
	}
	if !pins.ValidVersion(strings.TrimPrefix(asked, "v")) {
		return agentSandboxManifest{}, &option.Error{Option: OptionAgentSandbox, Value: asked, Rule: "is not a release version", Fix: "give the Agent Sandbox release like v0.6.0"}
	}
	// The version is written the way the pinned one is (v0.5.2), whichever way it was given.
	version := strings.TrimPrefix(asked, "v")
	if strings.HasPrefix(base.AgentSandbox.Version, "v") {
		version = "v" + version
	}
	url, err := swapVersion(base.AgentSandbox.Manifest.URL, base.AgentSandbox.Version, version)
	if err != nil {
		return agentSandboxManifest{}, fmt.Errorf("derive the Agent Sandbox manifest URL of %s from %s: %w", asked, pins.KeyAgentSandbox, err)
	}
	return agentSandboxManifest{asked: asked, version: version, url: url}, nil
}

// resolution is the new set while it is derived from the base: the pins changed so far and the
// reasons the release cannot be pinned, all collected before any is reported.
type resolution struct {
	base     *pins.Set
	set      pins.Set
	res      *Resolved
	changed  map[string]bool
	refusals []error
}

// newResolution starts the new set from the base with the release's OpenShell pin: its version,
// commit and archive, and the base's chart paths (checkLayout found them in the archive).
func newResolution(base *pins.Set, res *Resolved, facts *archiveFacts) *resolution {
	set := *base
	set.OpenShell = pins.OpenShell{
		Version: res.Version,
		Commit:  res.Commit,
		SourceArchive: pins.SourceArchive{
			Artifact:      pins.Artifact{URL: res.Archive.URL, SHA256: facts.SHA256},
			TopDirectory:  facts.TopDirectory,
			HelmDirectory: base.OpenShell.SourceArchive.HelmDirectory,
		},
		Charts: base.OpenShell.Charts,
	}
	changed := map[string]bool{pins.KeyOpenShell: true, pins.KeySourceArchive: true}
	for _, g := range base.GatewayImages() {
		changed[g.Key] = true
	}
	return &resolution{base: base, set: set, res: res, changed: changed}
}

// pinReleaseImages resolves the images the Gateway runs (the gateway, sandbox and supervisor
// images) of the release: the base's repositories, tagged by the release commit.
func (r *resolution) pinReleaseImages(ctx context.Context, reg *registry) {
	for _, g := range r.base.GatewayImages() {
		img := pins.Image{Registry: g.Image.Registry, Repository: g.Image.Repository, Tag: r.res.Commit}
		got, err := pinIndex(ctx, reg, g.Key, img, fmt.Sprintf("the images of OpenShell %s are tagged by its commit %s; check that the release published its images, and that the commit is the release's (%s)", r.res.Version, r.res.Commit, OptionCommit))
		if err != nil {
			r.refusals = append(r.refusals, err)
			continue
		}
		r.set.SetImage(g.Key, got.image)
		r.res.Images = append(r.res.Images, ResolvedImage{Pin: g.Key, Reference: got.image.String(), Platforms: got.platforms})
	}
}

// pinOverrides resolves or checks the image replacements, in pin file order.
func (r *resolution) pinOverrides(ctx context.Context, reg *registry, overrides map[string]pins.Image) {
	for _, e := range r.base.Entries() {
		img, ok := overrides[e.Key]
		if !ok {
			continue
		}
		got, err := pinIndex(ctx, reg, e.Key, img, "give another reference with "+ImageOptions[e.Key])
		if err != nil {
			r.refusals = append(r.refusals, err)
			continue
		}
		*imageSlot(&r.set, e.Key) = got.image
		r.changed[e.Key] = true
		r.res.Images = append(r.res.Images, ResolvedImage{Pin: e.Key, Reference: got.image.String(), Platforms: got.platforms})
	}
}

// pinAgentSandbox downloads the Agent Sandbox manifest asked for, if any, to pin its checksum.
func (r *resolution) pinAgentSandbox(ctx context.Context, dl downloader, agent agentSandboxManifest) {
	if agent.url == "" {
		return
	}
	sum, n, err := dl.hash(ctx, agent.url, io.Discard)
	if err != nil {
		r.refusals = append(r.refusals, fmt.Errorf("Agent Sandbox %s: %w; check that the release exists", agent.asked, err))
		return
	}
	r.set.AgentSandbox = pins.AgentSandbox{Version: agent.version, Manifest: pins.Artifact{URL: agent.url, SHA256: sum}}
	r.changed[pins.KeyAgentSandbox] = true
	r.res.AgentSandbox = &ResolvedArtifact{URL: agent.url, SHA256: sum, Size: n}
}

// finish drops the base's notes about the pins that changed (they described the old values),
// lists the pins kept from the base, and hands out the new set, which has no source yet.
func (r *resolution) finish() *Resolved {
	r.set.Notes = nil
	for _, n := range r.base.Notes {
		if r.changed[n.Pin] {
			r.res.DroppedNotes = append(r.res.DroppedNotes, n)
			continue
		}
		r.set.Notes = append(r.set.Notes, n)
	}
	for _, e := range r.base.Entries() {
		// A pin with several values (a routing controller's images) is one entry per value.
		if !r.changed[e.Key] && !slices.Contains(r.res.Kept, e.Key) {
			r.res.Kept = append(r.res.Kept, e.Key)
		}
	}
	r.set.Source = ""
	r.res.Set = &r.set
	return r.res
}

// Encode writes the resolved set as a pin file, with a header saying how it was made.
func (r *Resolved) Encode(now time.Time) ([]byte, error) {
	header := fmt.Sprintf(`Pinned artifacts for occ dev up: OpenShell %s (commit %s).
Written by occ dev pins resolve on %s from %s.
Use it with --pin-file or OCC_DEVELOPMENT_PIN_FILE; check it with occ dev pins verify --pin-file FILE.`,
		r.Version, r.Commit, now.UTC().Format(time.DateOnly), r.Base)
	return pins.Encode(r.Set, header)
}

// releaseCommit settles the release commit from the archive's pax comment and --commit.
func releaseCommit(facts *archiveFacts, flag, archiveURL string) (commit, source string, err error) {
	fromArchive := ""
	if pins.ValidCommit(facts.Commit) {
		fromArchive = facts.Commit
	}
	switch {
	case fromArchive != "" && flag != "" && flag != fromArchive:
		return "", "", &option.Error{Option: OptionCommit, Value: flag, Rule: "disagrees with the commit " + fromArchive + " that the archive's pax global header carries (git archive writes the archived commit there)", Fix: "drop " + OptionCommit + ", or check which release you mean"}
	case fromArchive != "":
		return fromArchive, "the archive's pax global header", nil
	case flag != "":
		return flag, OptionCommit, nil
	}
	what := "no pax global header comment"
	if facts.Commit != "" {
		what = fmt.Sprintf("a pax global header comment %q that is not a commit id", facts.Commit)
	}
	return "", "", &option.Error{Option: OptionCommit, Value: "", Rule: fmt.Sprintf("is needed: the archive %s carries %s, so the release commit that tags its images is unknown", redactURL(archiveURL), what),
		Fix: "give the 40-hex commit the release tag points at (git ls-remote https://github.com/NVIDIA/OpenShell refs/tags/vVERSION)"}
}

// checkLayout requires one top directory and the base's Gateway and Workspace charts, each a
// directory with a Chart.yaml under the helm directory.
func checkLayout(facts *archiveFacts, base pins.OpenShell, archiveURL string) error {
	shown := redactURL(archiveURL)
	if facts.TopDirectory == "" {
		return fmt.Errorf("the archive %s does not hold one top directory, as a GitHub tag tarball does; check the URL", shown)
	}
	var errs []error
	helm := base.SourceArchive.HelmDirectory
	for _, c := range []struct{ key, dir string }{{pins.KeyGatewayChart, base.Charts.Gateway}, {pins.KeyWorkspaceChart, base.Charts.Workspace}} {
		if !slices.Contains(facts.ChartDirs, c.dir) {
			errs = append(errs, fmt.Errorf("%s: the archive has no %s/%s/Chart.yaml", c.key, facts.TopDirectory, c.dir))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	var found []string
	for _, d := range facts.ChartDirs {
		if d == helm || strings.HasPrefix(d, helm+"/") {
			found = append(found, d)
		}
	}
	list := "none"
	if len(found) > 0 {
		list = strings.Join(found, ", ")
	}
	return fmt.Errorf("the chart layout of %s is not the pinned one (charts under %s: %s): %w; the release moved its charts: write the chart paths of the new layout into a pin file by hand", shown, path.Join(facts.TopDirectory, helm), list, errors.Join(errs...))
}

// swapVersion replaces the last occurrence of old in s (a URL following a release pattern) with
// new; a v-prefixed tag in s keeps its v.
func swapVersion(s, old, new string) (string, error) {
	i := strings.LastIndex(s, old)
	if old == "" || i < 0 {
		return "", fmt.Errorf("%s does not contain the pinned version %q, so the URL of another release cannot be derived from it; write the pin file by hand", redactURL(s), old)
	}
	trimmed := strings.TrimPrefix(new, "v")
	if strings.HasPrefix(old, "v") {
		trimmed = "v" + trimmed
	}
	return s[:i] + trimmed + s[i+len(old):], nil
}

// parseOverrides checks the image replacements before anything is fetched.
func parseOverrides(in map[string]string) (map[string]pins.Image, error) {
	out := map[string]pins.Image{}
	for key, ref := range in {
		if ref == "" {
			continue
		}
		flag, ok := ImageOptions[key]
		if !ok {
			return nil, &option.Error{Option: key, Value: ref, Rule: "is not a pin that can be replaced", Fix: "replace one of " + strings.Join(slices.Sorted(maps.Keys(ImageOptions)), ", ") + "; the OpenShell images come from the release"}
		}
		img, err := pins.ParseImage(ref)
		if err != nil {
			return nil, &option.Error{Option: flag, Value: ref, Rule: "is not an image reference (" + err.Error() + ")", Fix: "give [registry/]repository:tag or …@sha256:<64 hex>"}
		}
		if img.Tag == "" && img.Digest == "" {
			return nil, &option.Error{Option: flag, Value: ref, Rule: "has neither a tag nor a digest", Fix: "give repository:tag (resolved to its digest now) or repository@sha256:<64 hex>"}
		}
		out[key] = img
	}
	return out, nil
}

// imageSlot is the field of set that holds the image pin key.
func imageSlot(set *pins.Set, key string) *pins.Image {
	switch key {
	case pins.KeyK3sImage:
		return &set.K3s.Image
	case pins.KeyK3dToolsImage:
		return &set.K3d.ToolsImage
	case pins.KeyOCENodeBaseImage:
		return &set.OCE.NodeBaseImage
	case pins.KeyOCEPostgresImage:
		return &set.OCE.PostgresImage
	}
	panic("online: no image slot for " + key)
}

type indexPin struct {
	image     pins.Image
	platforms []string
}

// pinIndex resolves img (by its digest when it has one, else by its tag) and requires a
// multi-platform index that holds, and serves, every Required platform. The image it returns
// carries the index digest. fix says what to do when the reference does not exist.
func pinIndex(ctx context.Context, reg *registry, key string, img pins.Image, fix string) (indexPin, error) {
	var ref name.Reference
	var err error
	shown := img.String()
	if img.Digest != "" {
		ref, err = name.NewDigest(img.Name() + "@" + img.Digest)
	} else {
		ref, err = name.NewTag(img.Name() + ":" + img.Tag)
	}
	if err != nil {
		return indexPin{}, fmt.Errorf("%s %s: %w", key, shown, err)
	}
	m, err := reg.describe(ctx, ref)
	if err != nil {
		if notFound(err) {
			return indexPin{}, fmt.Errorf("%s: image %s does not exist at its registry; %s", key, shown, fix)
		}
		return indexPin{}, fmt.Errorf("%s: image %s: %s", key, shown, registryProblem(ctx, img.Registry, err))
	}
	var missing []string
	for _, want := range Required {
		e, ok := m.entry(want)
		if !ok {
			missing = append(missing, platformString(want))
			continue
		}
		if !m.Index {
			continue
		}
		if err := reg.exists(ctx, ref.Context(), e.Digest); err != nil {
			return indexPin{}, fmt.Errorf("%s: image %s lists %s for %s, which the registry does not serve (%s); pin another release or image", key, shown, e.Digest, platformString(want), registryProblem(ctx, img.Registry, err))
		}
	}
	if len(missing) > 0 || !m.Index {
		without := ""
		if len(missing) > 0 {
			without = ", without " + strings.Join(missing, " and ")
		}
		return indexPin{}, fmt.Errorf("%s: image %s is %s%s: occ pins only multi-platform indexes holding %s, so that every engine can run the image; ask for a multi-platform image, or pin another one", key, shown, m.kind(), without, requiredList())
	}
	var platforms []string
	for _, p := range m.Platforms {
		platforms = append(platforms, platformString(p.Platform))
	}
	out := img
	out.Digest = m.Digest
	return indexPin{image: out, platforms: platforms}, nil
}

func requiredList() string {
	var s []string
	for _, p := range Required {
		s = append(s, platformString(p))
	}
	return strings.Join(s, " and ")
}
