package diagnose

import (
	"context"
	"fmt"
	"io"

	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/syncbuf"
)

// engineFacts are the container engine's facts the bundle keeps: what it is, its version and
// image store (which decides what an image ID means), and where it keeps its data.
type engineFacts struct {
	Endpoint      string      `json:"endpoint"`
	Kind          string      `json:"kind"`
	Version       string      `json:"version"`
	APIVersion    string      `json:"apiVersion"`
	Platform      string      `json:"platform,omitempty"`
	OS            string      `json:"os,omitempty"`
	Arch          string      `json:"arch,omitempty"`
	KernelVersion string      `json:"kernelVersion,omitempty"`
	OSName        string      `json:"operatingSystem,omitempty"`
	Driver        string      `json:"storageDriver,omitempty"`
	DriverStatus  [][2]string `json:"driverStatus,omitempty"`
	ImageStore    string      `json:"imageStore,omitempty"`
	CgroupDriver  string      `json:"cgroupDriver,omitempty"`
	CgroupVersion string      `json:"cgroupVersion,omitempty"`
	NCPU          int         `json:"cpus,omitempty"`
	MemTotal      int64       `json:"memoryBytes,omitempty"`
	Containers    int         `json:"containers"`
	Images        int         `json:"images"`
}

// Engine writes engine.yaml: the engine's version, image store and host facts.
func Engine(ctx context.Context, b *Bundle, eng *docker.Engine) {
	const name = "engine.yaml"
	f := engineFacts{Endpoint: eng.Endpoint.String(), Kind: eng.Name(), Version: eng.Identity.Version, APIVersion: eng.Identity.APIVersion}
	verbs := eng.Verbs()
	if v, err := verbs.Version(ctx); err != nil {
		b.Missing(name+" (version)", fmt.Errorf("read the engine's version: %w", err))
	} else {
		f.Platform, f.OS, f.Arch, f.KernelVersion = v.Platform, v.OS, v.Arch, v.KernelVersion
	}
	// The engine's host facts and its image store are one answer (system info); a failure is
	// reported for each, as two reads of it would report it.
	if id, err := verbs.Identify(ctx); err != nil {
		b.Missing(name+" (info)", fmt.Errorf("read the engine's info: %w", err))
		b.Missing(name+" (image store)", fmt.Errorf("read the engine's image store (docker info): %w", err))
	} else {
		h := id.Host
		f.OSName, f.Driver, f.CgroupDriver, f.CgroupVersion = h.OperatingSystem, h.Driver, h.CgroupDriver, h.CgroupVersion
		f.NCPU, f.MemTotal, f.Containers, f.Images = h.NCPU, h.MemTotal, h.Containers, h.Images
		f.DriverStatus, f.ImageStore = h.DriverStatus, string(id.Store)
	}
	b.AddYAML(name, f)
}

// Compose writes the Compose project's services with their states (compose/services.yaml, as
// `occ dev status` reads them) and each service's log (compose/<service>.log), stopped
// containers included.
func Compose(ctx context.Context, b *Bundle, stack compose.Stack) {
	states, err := stack.Status(ctx)
	if err != nil {
		b.Missing("compose/services.yaml", err)
		return
	}
	b.AddYAML("compose/services.yaml", states)
	var names []string
	for _, s := range states {
		names = append(names, s.Service)
	}
	if len(names) == 0 {
		return
	}
	logs := map[string]*syncbuf.Buffer{}
	for _, n := range names {
		logs[n] = &syncbuf.Buffer{}
	}
	err = stack.Logs(ctx, compose.LogOptions{
		Services: names, Tail: logTail, Timestamps: true,
		Output: func(svc string) io.WriteCloser {
			if l, ok := logs[svc]; ok {
				return nopCloser{l}
			}
			return nopCloser{io.Discard}
		},
	})
	if err != nil {
		b.Missing("compose logs", err)
	}
	for _, n := range names {
		if data := logs[n].Bytes(); len(data) > 0 {
			b.Add("compose/"+n+".log", data)
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
