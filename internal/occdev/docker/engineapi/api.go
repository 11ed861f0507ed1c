// Package engineapi is the Docker Engine API as occ drives it (API) and the wrappers an engine
// kind needs over the Docker client where its answers mean something else than Docker's
// (Podman). It sits below package engine, whose registered kinds name their wrapper, and below
// package docker, which connects and applies it; everything else reaches the API through docker.
package engineapi

import (
	"context"
	"io"
	"net"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// API is everything occ asks of a container engine, and nothing more: the calls of the Docker
// Engine API that the flow, the image steps, the cluster provider and the Compose profile make.
// Its request and response types are the Docker API's, the wire shapes Podman's
// Docker-compatible API speaks too. Docker's client is an API as it is; an engine kind that answers
// some calls differently wraps it (engine.Registration.API; Podman's wrapper is in podman.go).
// A call occ starts to make is added here, so what an engine must serve is read in one place.
type API interface {
	// Identity and lifetime.
	Ping(ctx context.Context) (types.Ping, error)
	ServerVersion(ctx context.Context) (types.Version, error)
	Info(ctx context.Context) (system.Info, error)
	Close() error

	// Images.
	ImageInspect(ctx context.Context, image string, opts ...ImageInspectOption) (image.InspectResponse, error)
	ImagePull(ctx context.Context, ref string, options image.PullOptions) (io.ReadCloser, error)
	ImageTag(ctx context.Context, image, ref string) error
	ImageRemove(ctx context.Context, image string, options image.RemoveOptions) ([]image.DeleteResponse, error)
	ImageSave(ctx context.Context, images []string, opts ...ImageSaveOption) (io.ReadCloser, error)
	ImageLoad(ctx context.Context, input io.Reader, opts ...ImageLoadOption) (image.LoadResponse, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)
	DistributionInspect(ctx context.Context, image, encodedRegistryAuth string) (registry.DistributionInspect, error)
	// DialHijack opens the connection of a BuildKit session beside an image build.
	DialHijack(ctx context.Context, url, proto string, meta map[string][]string) (net.Conn, error)

	// Containers.
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerAttach(ctx context.Context, container string, options container.AttachOptions) (types.HijackedResponse, error)
	ContainerStart(ctx context.Context, container string, options container.StartOptions) error
	ContainerWait(ctx context.Context, container string, condition container.WaitCondition) (<-chan container.WaitResponse, <-chan error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerInspect(ctx context.Context, container string) (container.InspectResponse, error)
	ContainerLogs(ctx context.Context, container string, options container.LogsOptions) (io.ReadCloser, error)
	ContainerRemove(ctx context.Context, container string, options container.RemoveOptions) error
	ContainerExecCreate(ctx context.Context, container string, options container.ExecOptions) (container.ExecCreateResponse, error)
	ContainerExecAttach(ctx context.Context, execID string, options container.ExecAttachOptions) (types.HijackedResponse, error)
	ContainerExecInspect(ctx context.Context, execID string) (container.ExecInspect, error)
	CopyFromContainer(ctx context.Context, container, srcPath string) (io.ReadCloser, container.PathStat, error)
	Events(ctx context.Context, options events.ListOptions) (<-chan events.Message, <-chan error)

	// Networks and volumes.
	NetworkList(ctx context.Context, options network.ListOptions) ([]network.Summary, error)
	NetworkInspect(ctx context.Context, network string, options network.InspectOptions) (network.Inspect, error)
	NetworkDisconnect(ctx context.Context, network, container string, force bool) error
	NetworkRemove(ctx context.Context, network string) error
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error
}

// ImageInspectOption and ImageSaveOption are the client's option types of those calls, named here
// so that code outside this package never imports the client.
type (
	ImageInspectOption = client.ImageInspectOption
	ImageSaveOption    = client.ImageSaveOption
	ImageLoadOption    = client.ImageLoadOption
)

// ImageInspectWithManifests asks for the manifests a multi-platform image lists (API 1.48 and
// later, the containerd image store); ImageSaveWithPlatforms saves only the named platforms'
// manifests of a multi-platform image (API 1.48 and later).
var (
	ImageInspectWithManifests = client.ImageInspectWithManifests
	ImageSaveWithPlatforms    = client.ImageSaveWithPlatforms
)

// The Docker client is an API as it is.
var _ API = (*client.Client)(nil)
