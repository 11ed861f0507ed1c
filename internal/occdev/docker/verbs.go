package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openclaw/occ/internal/occdev/docker/engineapi"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// Verbs is the engine in occ's own verbs (engine.Engine), over its API.
func (e *Engine) Verbs() engine.Engine {
	return apiEngine{api: e.API, connected: e.Identity}
}

// VerbsOf is connect (a recorded engine's, Recorded), handing out the engine in occ's own verbs.
func VerbsOf(connect func(context.Context) (*Engine, error)) func(context.Context) (engine.Engine, error) {
	return func(ctx context.Context) (engine.Engine, error) {
		eng, err := connect(ctx)
		if err != nil {
			return nil, err
		}
		return eng.Verbs(), nil
	}
}

// apiEngine is engine.Engine over the Docker API: the one implementation of the seam, for Docker
// and for every kind whose wrapper makes its answers Docker's (Podman's).
type apiEngine struct {
	api API
	// connected is what the engine said it is when occ connected (Engine.Identity), which
	// Identify completes with its system info.
	connected engine.Identity
}

func (a apiEngine) Kind() engine.Kind { return a.connected.Kind }

func (a apiEngine) Close() error { return a.api.Close() }

func (a apiEngine) Identify(ctx context.Context) (engine.Identity, error) {
	info, err := a.api.Info(ctx)
	if err != nil {
		return engine.Identity{}, err
	}
	id := a.connected
	id.Store = engine.StoreClassic
	id.Platform = engine.NormalisePlatform(info.OSType, info.Architecture, "")
	id.Host = engine.Host{Name: info.Name, KernelVersion: info.KernelVersion, OperatingSystem: info.OperatingSystem, Driver: info.Driver, CgroupDriver: info.CgroupDriver, CgroupVersion: info.CgroupVersion,
		NCPU: info.NCPU, MemTotal: info.MemTotal, Containers: info.Containers, Images: info.Images}
	if id.Kind.Registration().StableID {
		id.ID = info.ID
	}
	for _, kv := range info.DriverStatus {
		id.Host.DriverStatus = append(id.Host.DriverStatus, kv)
		if len(kv) == 2 && kv[0] == "driver-type" && kv[1] == "io.containerd.snapshotter.v1" {
			id.Store = engine.StoreContainerd
		}
	}
	return id, nil
}

func (a apiEngine) Version(ctx context.Context) (engine.Version, error) {
	v, err := a.api.ServerVersion(ctx)
	if err != nil {
		return engine.Version{}, err
	}
	return engine.Version{Platform: v.Platform.Name, OS: v.Os, Arch: v.Arch, KernelVersion: v.KernelVersion}, nil
}

func (a apiEngine) Image(ctx context.Context, ref string) (engine.Image, error) {
	ins, err := a.api.ImageInspect(ctx, ref)
	if err != nil {
		return engine.Image{}, err
	}
	return imageOf(ins), nil
}

func (a apiEngine) ImageManifests(ctx context.Context, ref string) (engine.Image, error) {
	ins, err := a.api.ImageInspect(ctx, ref, engineapi.ImageInspectWithManifests(true))
	if err != nil {
		return engine.Image{}, err
	}
	img := imageOf(ins)
	for _, m := range ins.Manifests {
		em := engine.Manifest{ID: m.ID, Kind: string(m.Kind), Available: m.Available}
		if m.ImageData != nil {
			p := m.ImageData.Platform
			em.Platform = &p
		}
		img.Manifests = append(img.Manifests, em)
	}
	return img, nil
}

// imageOf is an image inspect answer in occ's terms.
func imageOf(ins image.InspectResponse) engine.Image {
	img := engine.Image{ID: ins.ID, RepoTags: ins.RepoTags, RepoDigests: ins.RepoDigests, Size: ins.Size,
		Platform: engine.NormalisePlatform(ins.Os, ins.Architecture, ins.Variant)}
	if ins.Config != nil {
		img.Labels = ins.Config.Labels
	}
	if ins.Descriptor != nil {
		img.Target = ins.Descriptor.Digest.String()
	}
	return img
}

// Pull runs the engine's pull of ref and turns its JSON progress stream into reports. The stream
// carries the pull's errors too, as messages; the HTTP status alone does not.
func (a apiEngine) Pull(ctx context.Context, ref string, progress func(engine.PullProgress)) error {
	rc, err := a.api.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("read pull progress: %w", err)
		}
		if m.Error != nil {
			return m.Error
		}
		if progress == nil {
			continue
		}
		p := engine.PullProgress{Layer: m.ID, Status: m.Status}
		if m.Progress != nil {
			p.Current, p.Total = m.Progress.Current, m.Progress.Total
		}
		progress(p)
	}
}

func (a apiEngine) ResolveTag(ctx context.Context, ref string) (string, error) {
	d, err := a.api.DistributionInspect(ctx, ref, "")
	if err != nil {
		return "", err
	}
	return d.Descriptor.Digest.String(), nil
}

func (a apiEngine) Tag(ctx context.Context, img, ref string) error {
	return a.api.ImageTag(ctx, img, ref)
}

func (a apiEngine) Untag(ctx context.Context, ref string) error {
	_, err := a.api.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true})
	return err
}

func (a apiEngine) Save(ctx context.Context, refs []string, platform *ocispec.Platform) (io.ReadCloser, error) {
	var save []engineapi.ImageSaveOption
	if platform != nil {
		save = append(save, engineapi.ImageSaveWithPlatforms(*platform))
	}
	return a.api.ImageSave(ctx, refs, save...)
}

func (a apiEngine) Load(ctx context.Context, archive io.Reader) error {
	resp, err := a.api.ImageLoad(ctx, archive)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The engine reports a failed load inside its JSON stream, not as an HTTP error.
	return jsonmessage.DisplayJSONMessagesStream(resp.Body, io.Discard, 0, false, nil)
}

func (a apiEngine) Exec(ctx context.Context, containerName string, in engine.ExecInput, cmd ...string) (engine.ExecResult, error) {
	return execute(ctx, a.api, containerName, in, cmd)
}

func (a apiEngine) RunOnce(ctx context.Context, s engine.OneShot) (engine.ExecResult, error) {
	return runOnce(ctx, a.api, s)
}

func (a apiEngine) ContainerExists(ctx context.Context, name string) (bool, error) {
	_, err := a.api.ContainerInspect(ctx, name)
	switch {
	case err == nil:
		return true, nil
	case engine.IsNotFound(err):
		return false, nil
	}
	return false, err
}

func (a apiEngine) ImagesInUse(ctx context.Context) (map[string]bool, error) {
	list, err := a.api.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, err
	}
	used := make(map[string]bool, len(list))
	for _, c := range list {
		used[BareImageID(c.ImageID)] = true
	}
	return used, nil
}

func (a apiEngine) List(ctx context.Context, sort engine.Sort, labels map[string]string) ([]engine.Object, error) {
	f := filters.NewArgs()
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f.Add("label", k+"="+labels[k])
	}
	out, err := a.list(ctx, sort, f)
	if errors.Is(err, errUnlisted) {
		return nil, fmt.Errorf("list %ss by label: occ lists containers, networks and volumes", sort)
	}
	return out, err
}

func (a apiEngine) ListNamed(ctx context.Context, sort engine.Sort, name string) ([]engine.Object, error) {
	out, err := a.list(ctx, sort, filters.NewArgs(filters.Arg("name", name)))
	if errors.Is(err, errUnlisted) {
		return nil, fmt.Errorf("list %ss by name: occ lists containers, networks and volumes", sort)
	}
	return out, err
}

// errUnlisted is a sort list does not list.
var errUnlisted = errors.New("not listed")

// list lists the objects of sort that f selects.
func (a apiEngine) list(ctx context.Context, sort engine.Sort, f filters.Args) ([]engine.Object, error) {
	var out []engine.Object
	switch sort {
	case engine.Containers:
		cs, err := a.api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			var name string
			if len(c.Names) > 0 {
				name = trimSlash(c.Names[0])
			}
			o := engine.Object{Sort: sort, ID: c.ID, Name: name, Labels: c.Labels, State: string(c.State), Image: c.ImageID,
				Created: time.Unix(c.Created, 0)}
			for _, m := range c.Mounts {
				if m.Type == "volume" && m.Name != "" {
					o.Volumes = append(o.Volumes, m.Name)
				}
			}
			out = append(out, o)
		}
	case engine.Networks:
		ns, err := a.api.NetworkList(ctx, network.ListOptions{Filters: f})
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			o := engine.Object{Sort: sort, ID: n.ID, Name: n.Name, Labels: n.Labels}
			for _, c := range n.IPAM.Config {
				o.Subnets = append(o.Subnets, c.Subnet)
			}
			out = append(out, o)
		}
	case engine.Volumes:
		vs, err := a.api.VolumeList(ctx, volume.ListOptions{Filters: f})
		if err != nil {
			return nil, err
		}
		for _, v := range vs.Volumes {
			if v != nil {
				out = append(out, engine.Object{Sort: sort, ID: v.Name, Name: v.Name, Labels: v.Labels})
			}
		}
	default:
		return nil, errUnlisted
	}
	return out, nil
}

// trimSlash drops the leading slash the Docker API writes before a container's name.
func trimSlash(name string) string {
	if len(name) > 0 && name[0] == '/' {
		return name[1:]
	}
	return name
}

func (a apiEngine) Inspect(ctx context.Context, sort engine.Sort, name string) (engine.Object, error) {
	switch sort {
	case engine.Containers:
		c, err := a.api.ContainerInspect(ctx, name)
		if err != nil {
			return engine.Object{}, err
		}
		o := engine.Object{Sort: sort}
		if c.ContainerJSONBase != nil {
			o.ID, o.Name, o.Image = c.ID, trimSlash(c.Name), c.Image
			if t, err := time.Parse(time.RFC3339Nano, c.Created); err == nil {
				o.Created = t
			}
			if st := c.State; st != nil {
				o.State, o.Running, o.ExitCode = string(st.Status), st.Running, st.ExitCode
				if st.Health != nil {
					o.Health = strings.ToLower(string(st.Health.Status))
				}
			}
		}
		if c.Config != nil {
			o.Labels, o.TTY = c.Config.Labels, c.Config.Tty
		}
		if c.NetworkSettings != nil {
			for name, ep := range c.NetworkSettings.Networks {
				if ep == nil {
					continue
				}
				if o.Addresses == nil {
					o.Addresses = map[string]string{}
				}
				o.Addresses[name] = ep.IPAddress
			}
		}
		return o, nil
	case engine.Networks:
		n, err := a.api.NetworkInspect(ctx, name, network.InspectOptions{})
		if err != nil {
			return engine.Object{}, err
		}
		o := engine.Object{Sort: sort, ID: n.ID, Name: n.Name, Labels: n.Labels}
		for _, c := range n.IPAM.Config {
			o.Subnets = append(o.Subnets, c.Subnet)
		}
		for id, m := range n.Containers {
			if o.Members == nil {
				o.Members = map[string]string{}
			}
			o.Members[id] = m.IPv4Address
		}
		return o, nil
	case engine.Volumes:
		v, err := a.api.VolumeInspect(ctx, name)
		if err != nil {
			return engine.Object{}, err
		}
		return engine.Object{Sort: sort, ID: v.Name, Name: v.Name, Labels: v.Labels}, nil
	}
	return engine.Object{}, fmt.Errorf("inspect %s %s: occ inspects containers, networks and volumes by name", sort, name)
}

func (a apiEngine) Disconnect(ctx context.Context, networkName, containerName string) error {
	return a.api.NetworkDisconnect(ctx, networkName, containerName, false)
}

func (a apiEngine) Remove(ctx context.Context, sort engine.Sort, name string) error {
	switch sort {
	case engine.Containers:
		return a.api.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
	case engine.Images:
		return a.Untag(ctx, name)
	case engine.Networks:
		return a.api.NetworkRemove(ctx, name)
	case engine.Volumes:
		return a.api.VolumeRemove(ctx, name, false)
	}
	return fmt.Errorf("remove %s %s: occ removes containers, images, networks and volumes", sort, name)
}

// Events follows the engine's container events that f selects, in occ's terms. The engine's
// stream ends with an error (ctx's own when ctx ends it), which is passed on once.
func (a apiEngine) Events(ctx context.Context, labels map[string]string, actions ...string) (<-chan engine.Event, <-chan error) {
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f.Add("label", k+"="+labels[k])
	}
	for _, act := range actions {
		f.Add("event", act)
	}
	msgs, errs := a.api.Events(ctx, events.ListOptions{Filters: f})
	out := make(chan engine.Event)
	ended := make(chan error, 1)
	go func() {
		for {
			select {
			case m := <-msgs:
				ev := engine.Event{Action: string(m.Action), Container: m.Actor.ID, Labels: m.Actor.Attributes, Time: time.Unix(0, m.TimeNano)}
				select {
				case out <- ev:
				case <-ctx.Done():
					ended <- ctx.Err()
					return
				}
			case err := <-errs:
				ended <- err
				return
			}
		}
	}()
	return out, ended
}

func (a apiEngine) Logs(ctx context.Context, containerName string, r engine.LogsRequest, stdout, stderr io.Writer) error {
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: r.Follow, Timestamps: r.Timestamps, Tail: "all"}
	if r.Tail >= 0 {
		opts.Tail = strconv.Itoa(r.Tail)
	}
	if !r.Since.IsZero() {
		opts.Since = r.Since.UTC().Format(time.RFC3339Nano)
	}
	rc, err := a.api.ContainerLogs(ctx, containerName, opts)
	if err != nil {
		return err
	}
	defer rc.Close()
	if r.TTY {
		_, err = io.Copy(stdout, rc)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, rc)
	}
	return err
}

func (a apiEngine) CopyFrom(ctx context.Context, containerName, path string) (io.ReadCloser, error) {
	rc, _, err := a.api.CopyFromContainer(ctx, containerName, path)
	return rc, err
}
