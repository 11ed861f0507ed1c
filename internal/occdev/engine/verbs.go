package engine

import (
	"context"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Engine is a container engine in occ's own verbs and types: what occ's own image and exec logic
// asks of whatever engine it drives. Its one implementation is over the Docker API
// ((*docker.Engine).Verbs), so Docker and Podman (whose quirks stay in the Docker API's wrapper,
// engineapi.Podman) are what serve it; an engine that does not speak the Docker API would be a
// second implementation (the package doc says what it could then serve).
//
// Errors keep the engine's classification: an object that does not exist satisfies IsNotFound,
// an image a container still uses IsInUse; every other error is the engine's own, unwrapped.
type Engine interface {
	// Kind is the engine's registered kind.
	Kind() Kind
	// Identify reads what the engine is (one system-info call).
	Identify(ctx context.Context) (Identity, error)
	// Version reads the version facts of the engine's host.
	Version(ctx context.Context) (Version, error)

	// Image is the image the engine holds under ref (a name, a digest reference or an ID).
	Image(ctx context.Context, ref string) (Image, error)
	// ImageManifests is Image with the manifests the image's index lists, where the store
	// reports them (Docker's containerd store, API 1.48 and later); none elsewhere.
	ImageManifests(ctx context.Context, ref string) (Image, error)
	// Pull pulls ref (by digest where occ pulls pins) and reports the engine's progress to
	// progress, which may be nil. A failure the engine reports in its progress stream is
	// returned as an error.
	Pull(ctx context.Context, ref string, progress func(PullProgress)) error
	// ResolveTag is the digest a registry serves for a tagged reference, asked through the engine.
	ResolveTag(ctx context.Context, ref string) (string, error)
	// Tag gives the image (a name or an ID) the reference ref.
	Tag(ctx context.Context, image, ref string) error
	// Untag removes the reference ref, and the image with it when it was its last reference;
	// an image a container uses is refused (IsInUse), never forced.
	Untag(ctx context.Context, ref string) error
	// Save streams the images (references the engine holds) as one image archive; platform,
	// when set, is the one platform saved of a multi-platform image.
	Save(ctx context.Context, refs []string, platform *ocispec.Platform) (io.ReadCloser, error)
	// Load loads an image archive and returns once the engine has taken it, with the engine's
	// reason when it did not.
	Load(ctx context.Context, archive io.Reader) error

	// Exec runs cmd in the running container with in as its input and environment, and waits
	// for it to end. A non-zero exit is not an error: the caller decides what an exit code means.
	Exec(ctx context.Context, container string, in ExecInput, cmd ...string) (ExecResult, error)
	// RunOnce runs s once in a fresh container that the engine removes when it exits.
	RunOnce(ctx context.Context, s OneShot) (ExecResult, error)
	// ContainerExists reports whether the container exists (running or not); an error other
	// than its absence is returned with false.
	ContainerExists(ctx context.Context, name string) (bool, error)
	// ImagesInUse lists the IDs of the images some container (running or not) was created from,
	// each without its "sha256:" prefix.
	ImagesInUse(ctx context.Context) (map[string]bool, error)

	// List lists the engine's containers (running or not), networks or volumes that carry
	// every label of labels, all of that sort when labels is empty. Images are looked up by
	// reference (Image), never listed.
	List(ctx context.Context, sort Sort, labels map[string]string) ([]Object, error)
	// ListNamed lists the containers (running or not), networks or volumes of sort whose name
	// contains name: the engine matches substrings, so a caller that wants one name compares
	// the names it gets.
	ListNamed(ctx context.Context, sort Sort, name string) ([]Object, error)
	// Inspect is the container, network or volume of sort that name names (the engine may also
	// match an ID, or a prefix of one, to it).
	Inspect(ctx context.Context, sort Sort, name string) (Object, error)
	// Remove removes the object of sort by its name or ID: a container forced (it may run), an
	// image only as Untag removes one, a network or volume only when nothing uses it.
	Remove(ctx context.Context, sort Sort, name string) error
	// Disconnect detaches the container from the network (not forced).
	Disconnect(ctx context.Context, network, container string) error

	// Events streams the lifecycle events (Event.Action) of the containers that carry every
	// label of labels, only those of actions when actions is not empty, until ctx ends. The
	// error channel delivers one error when the stream ends, ctx's own error when ctx ended it.
	Events(ctx context.Context, labels map[string]string, actions ...string) (<-chan Event, <-chan error)
	// Logs copies the log of the container to stdout and stderr, each stream to its own writer
	// (the one stream of a container with a TTY, LogsRequest.TTY, to stdout), and returns at
	// the log's end, or when ctx ends with Follow.
	Logs(ctx context.Context, container string, r LogsRequest, stdout, stderr io.Writer) error
	// CopyFrom is the archive (a tar stream, as the engine writes it) of path in the container,
	// which may have exited.
	CopyFrom(ctx context.Context, container, path string) (io.ReadCloser, error)

	// Build builds an image from a directory through the engine's BuildKit builder and tags it.
	Build(ctx context.Context, r BuildRequest) (BuildResult, error)

	// Close releases the engine's connections.
	Close() error
}

// IsNotFound reports an object the engine does not hold.
func IsNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// IsInUse reports an object the engine refuses to remove because something uses it.
func IsInUse(err error) bool { return cerrdefs.IsConflict(err) }

// Identity is what an engine is: the one place occ keeps its facts. Kind, Version and APIVersion
// are known once occ has connected (the connection's Identity holds them, and every summary,
// message and builder check reads them there); the rest is the engine's system info, which
// Identify reads.
type Identity struct {
	Kind Kind
	// Version and APIVersion are what the engine reported when occ connected.
	Version, APIVersion string
	// ID is the engine's own identity where its kind keeps one (Registration.StableID), which
	// the state records and later commands compare; empty elsewhere.
	ID string
	// Store is the store the engine keeps images in, which decides what an image ID names.
	Store Store
	// Platform is the platform of the containers the engine runs, in the names images use.
	Platform Platform
	// Host are the facts of the engine's host a diagnosis keeps.
	Host Host
}

// Host are the facts of an engine's host and data (system info) a diagnosis keeps.
type Host struct {
	// Name is the host's name (its hostname), and KernelVersion the release of its kernel.
	Name, KernelVersion         string
	OperatingSystem, Driver     string
	DriverStatus                [][2]string
	CgroupDriver, CgroupVersion string
	NCPU                        int
	MemTotal                    int64
	Containers, Images          int
}

// Version are an engine's version facts of its host.
type Version struct {
	Platform, OS, Arch, KernelVersion string
}

// Store is an engine's image store: what its image IDs name, and how an image leaves it.
type Store string

const (
	// StoreClassic is Docker's graph-driver store (the default before Engine 29) and Podman's:
	// an image ID is the config digest, and docker save writes one platform's image with a
	// manifest of the engine's own.
	StoreClassic Store = "classic"
	// StoreContainerd is Docker's containerd image store (Engine 29's default, and new Docker
	// Desktop installs'): an image ID is the digest of the image's target, the pulled index or
	// manifest, and docker save writes that whole target, naming every platform's manifest
	// while carrying only the content the engine pulled, unless one platform is asked for.
	StoreContainerd Store = "containerd"
)

// Image is an image as an engine holds it.
type Image struct {
	// ID is the image's ID as the engine's store keeps it: the config digest on the classic
	// store, the digest of the image's target (an index or a manifest) on the containerd store.
	ID          string
	RepoTags    []string
	RepoDigests []string
	Size        int64
	// Labels are the labels the image's config carries.
	Labels map[string]string
	// Platform is the platform the image's config states, in the names images use.
	Platform Platform
	// Target is the digest of the image's target where the engine reports it (the containerd
	// store, API 1.48 and later); empty elsewhere.
	Target string
	// Manifests are the manifests the image's index lists, with what the engine holds of each
	// (ImageManifests only).
	Manifests []Manifest
}

// Manifest is one manifest an image's index lists.
type Manifest struct {
	// ID is the manifest's digest.
	ID string
	// Kind is what the manifest is: ManifestImage, or another kind (an attestation).
	Kind string
	// Available reports whether the engine holds the manifest's content.
	Available bool
	// Platform is the manifest's platform as the index spells it; nil for a manifest that
	// describes no image.
	Platform *ocispec.Platform
}

// ManifestImage is the Kind of a manifest of a runnable image.
const ManifestImage = "image"

// PullProgress is one progress report of a pull, in the engine's words.
type PullProgress struct {
	// Layer is the engine's layer ID, empty for the image as a whole.
	Layer string
	// Status is the engine's wording ("Downloading", "Pull complete").
	Status string
	// Current and Total are bytes, when the engine reports them.
	Current, Total int64
}

// ExecResult is what a command run in a container printed and how it ended.
type ExecResult struct {
	Stdout   string
	Stderr   string
	ExitCode int
}

// ExecInput is what Exec gives the command besides its arguments.
type ExecInput struct {
	// Stdin is copied to the command's standard input, which is then closed (a half-close of the
	// connection), so the command sees the end of its input exactly where the reader ends. The
	// copy stops at the reader's end or once the command has exited and its next write fails;
	// a reader that blocks is the caller's to close.
	Stdin io.Reader
	// Env holds NAME=value entries added to the command's environment.
	Env []string
}

// OneShot is a short command run once in a fresh container that the engine removes when it
// exits (docker run --rm).
type OneShot struct {
	// Image must be in the engine: nothing is pulled.
	Image string
	// Network is the container's network ("bridge" for the engine's default bridge).
	Network string
	// Entrypoint and Cmd are the command; Entrypoint replaces the image's.
	Entrypoint []string
	Cmd        []string
	// User runs the command as this user ("" is the image's).
	User string
	// Binds are bind mounts (source:target[:options]).
	Binds []string
	// Confined drops every capability but CapAdd, makes the root filesystem read-only and
	// forbids gaining privileges: for a helper that must do exactly one privileged thing.
	Confined bool
	CapAdd   []string
}

// Sort is a sort of object an engine holds.
type Sort string

const (
	Containers Sort = "container"
	Images     Sort = "image"
	Networks   Sort = "network"
	Volumes    Sort = "volume"
)

// Object is one object an engine lists.
type Object struct {
	Sort Sort
	// ID is the engine's ID of the object (a volume's is its name).
	ID   string
	Name string
	// Labels are the object's labels.
	Labels map[string]string
	// Subnets are a network's address ranges (its IPAM configuration).
	Subnets []string
	// Members are the containers a network lists as attached, by ID, with the IPv4 address
	// (CIDR) it lists for each, empty where it lists none: Inspect only.
	Members map[string]string

	// State is a container's state in the engine's words ("created", "running", "exited",
	// "dead"…).
	State string
	// Running reports a container whose process runs (running, paused or restarting): Inspect
	// only.
	Running bool
	// ExitCode is an exited container's exit code, and Health its healthcheck's status in
	// lower case ("healthy", "starting"; empty without a healthcheck): Inspect only.
	ExitCode int
	Health   string
	// TTY reports a container whose output is one terminal stream (Inspect only).
	TTY bool
	// Image is the ID of the image a container was created from.
	Image string
	// Created is when a container was created.
	Created time.Time
	// Volumes are the names of the volumes a container mounts (List only).
	Volumes []string
	// Addresses are a container's IP addresses by the network's name (Inspect only).
	Addresses map[string]string
}

// Event is one lifecycle event of a container.
type Event struct {
	// Action is the engine's word for what happened ("start", "die", "destroy"…).
	Action string
	// Container is the container's ID, and Labels its labels.
	Container string
	Labels    map[string]string
	// Time is when it happened, as the engine's clock says.
	Time time.Time
}

// Container events occ follows.
const (
	EventStart = "start"
	EventDie   = "die"
)

// LogsRequest is what of a container's log Logs reads.
type LogsRequest struct {
	// Follow keeps reading as the container writes, until ctx ends.
	Follow bool
	// Timestamps prefixes each line with the engine's timestamp.
	Timestamps bool
	// Tail is how many of the last lines are read; negative reads them all.
	Tail int
	// Since reads the lines written from then on, when not zero.
	Since time.Time
	// TTY says the container has a TTY (Object.TTY): its log is one terminal stream, copied to
	// stdout as it is.
	TTY bool
}

// BuildRequest is one image build from a directory.
type BuildRequest struct {
	// ContextDir is the absolute build context directory; its .dockerignore is honoured.
	ContextDir string
	// Dockerfile is the Dockerfile's slash-separated path inside ContextDir.
	Dockerfile string
	// Target is the stage to build; empty builds the last stage.
	Target string
	// Args are the build arguments.
	Args map[string]string
	// Tag names the result in the engine.
	Tag string
	// Hold, when set, is a second name the build itself gives the result, one no other build
	// uses: the caller's hold on the image while it needs it by ID. Another build of Tag moves
	// Tag, and on the containerd image store the image that loses its last name is deleted at
	// once; the hold keeps it. The result is the image Hold names.
	Hold string
	// Progress receives the build output line by line; nil discards it.
	Progress func(line string)
	// NetworkMode is the network of RUN steps; empty is the engine's default. A test engine
	// without the default bridge network needs "none".
	NetworkMode string
}

// BuildResult is what Build made.
type BuildResult struct {
	// ID is the built image's ID as the engine's store keeps it (Image.ID).
	ID string
}

// Platform is an OS and CPU architecture in the spelling of image configs and OCI indexes
// (linux/amd64, linux/arm64, linux/arm/v7).
type Platform struct {
	OS           string
	Architecture string
	Variant      string
}

func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// NormalisePlatform maps the machine names engines report to the architecture names of images:
// Docker's info carries uname's machine (x86_64, aarch64, armv7l), image configs carry Go's
// GOARCH names (amd64, arm64, arm + variant).
func NormalisePlatform(os, arch, variant string) Platform {
	os, arch, variant = strings.ToLower(os), strings.ToLower(arch), strings.ToLower(variant)
	switch arch {
	case "x86_64", "x86-64", "amd64":
		arch = "amd64"
	case "aarch64", "arm64":
		// arm64 has one variant in practice (v8); images write it or leave it out.
		arch, variant = "arm64", ""
	case "armv7l", "armhf", "armv7":
		arch, variant = "arm", "v7"
	case "armv6l", "armel", "armv6":
		arch, variant = "arm", "v6"
	case "i386", "i686", "x86":
		arch = "386"
	}
	return Platform{OS: os, Architecture: arch, Variant: variant}
}
