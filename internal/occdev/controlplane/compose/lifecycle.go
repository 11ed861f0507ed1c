package compose

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// StartOptions are the inputs of StartData and StartAPI.
type StartOptions struct {
	Runner Runner
	Stack  Stack
	// Build builds the checkout's images first (compose up --build); false when the images
	// were selected explicitly.
	Build bool
	// Services are the services the stage names (Model.DataStage, Model.APIStage); empty names
	// the profile's own (DataServices, APIServices).
	Services []string
}

func (o StartOptions) services(profile []string) []string {
	if len(o.Services) > 0 {
		return o.Services
	}
	return profile
}

// StartData starts PostgreSQL, migration and bootstrap (`compose up --detach postgres migrate
// bootstrap`, with the added services they need) and waits until migrate and bootstrap have
// both exited 0.
// When a job fails, the error is "<svc> exited with <code>" with the job's last log lines,
// whether Compose itself noticed first (its `up` waits for service_completed_successfully) or
// the wait did.
func StartData(ctx context.Context, opts StartOptions) error {
	if err := opts.Runner.Up(ctx, UpOptions{Services: opts.services(DataServices), Build: opts.Build}); err != nil {
		if jobs := opts.Stack.Diagnose(ctx, JobServices...); jobs != nil {
			return errors.Join(jobs, err)
		}
		return err
	}
	if err := opts.Stack.WaitCompleted(ctx, JobServices...); err != nil {
		return fmt.Errorf("wait for %s and %s: %w", ServiceMigrate, ServiceBootstrap, err)
	}
	return nil
}

// DetachExitedJobs disconnects the one-shot jobs' (migrate, bootstrap) containers that the
// engine lists among the members of the network the cluster joins without an address k3d can
// read. k3d's lookup of the network a cluster joins parses every member's address, so the cluster
// cannot join while such a member is on it ("failed to parse IP Prefix of network …'s member
// …-bootstrap-1"). Podman lists a stopped container among a network's members with no address;
// Docker lists only running containers, which have one, so there this finds nothing to do. The
// containers stay (the bootstrap key is read from the bootstrap container later) and go with the
// project; a job never runs again (StartAPI uses --no-deps).
func (s Stack) DetachExitedJobs(ctx context.Context, network string) error {
	net, err := s.Engine.Inspect(ctx, engine.Networks, network)
	if err != nil {
		return fmt.Errorf("inspect network %s: %w", network, err)
	}
	for _, svc := range JobServices {
		id, err := s.oneContainer(ctx, svc)
		if err != nil || id == "" {
			return err
		}
		address, on := net.Members[id]
		if !on || readableAddress(address) {
			continue
		}
		c, err := s.Engine.Inspect(ctx, engine.Containers, id)
		if err != nil {
			return fmt.Errorf("inspect the %s container: %w", svc, err)
		}
		if c.State == "" || c.Running {
			continue
		}
		if err := s.Engine.Disconnect(ctx, network, id); err != nil {
			return fmt.Errorf("disconnect the exited %s container, listed without an address, from network %s (so the k3d cluster can join it): %w", svc, network, err)
		}
	}
	return nil
}

// readableAddress reports whether k3d reads addr, a network member's IPv4 address, as an
// address: an address with a prefix length (the form engines report) or without one.
func readableAddress(addr string) bool {
	if strings.Contains(addr, "/") {
		_, err := netip.ParsePrefix(addr)
		return err == nil
	}
	_, err := netip.ParseAddr(addr)
	return err == nil
}

// StartAPI starts the controller and the Kubernetes worker (with the added services they need
// that are not running yet) once the cluster and the Installation exist. The jobs they depend on
// have completed, and --no-deps keeps Compose from starting them again (a second bootstrap run
// writes no key and a second migrate run is pointless).
func StartAPI(ctx context.Context, opts StartOptions) error {
	return opts.Runner.Up(ctx, UpOptions{Services: opts.services(APIServices), Build: opts.Build, NoDeps: true})
}

// StartAdded starts the services the user's Compose files add (Model.Added), after the API
// services, with --no-deps: everything they need of the profile runs already, and Compose orders
// them among themselves by their dependencies.
func StartAdded(ctx context.Context, opts StartOptions, services []string) error {
	if len(services) == 0 {
		return nil
	}
	return opts.Runner.Up(ctx, UpOptions{Services: services, Build: opts.Build, NoDeps: true})
}

// Recreate replaces the containers of running services with new ones from the snapshot
// (--no-deps --force-recreate), as `occ dev reload` does after rebuilding their image: the
// one-shot jobs they depend on stay completed, and a service whose image tag now names the new
// build runs it.
//
// A recreation cut short (occ killed or interrupted while Compose ran) can leave a service with
// its old container, renamed, beside a new one that never started; Compose's next recreation
// then fails renaming onto the taken name. The containers of such a service (and their
// anonymous volumes, which nothing else would remove) are removed first, on the stack s.
func Recreate(ctx context.Context, r Runner, s Stack, services []string) error {
	if len(services) == 0 {
		return nil
	}
	var split []string
	for _, svc := range services {
		list, err := s.serviceContainers(ctx, svc)
		if err != nil {
			return err
		}
		if len(list) > 1 {
			split = append(split, svc)
		}
	}
	if len(split) > 0 {
		if err := r.Run(ctx, append([]string{"rm", "--force", "--stop", "--volumes"}, split...)...); err != nil {
			return err
		}
	}
	return r.Up(ctx, UpOptions{Services: services, NoDeps: true, ForceRecreate: true})
}

// StopReconcilers stops the controller and the worker, the first step of `down` and of a
// rollback, so nothing reconciles against a cluster that is about to disappear.
func StopReconcilers(ctx context.Context, r Runner) error {
	return r.Stop(ctx, APIServices...)
}

// RemoveOptions are the inputs of Remove.
type RemoveOptions struct {
	Runner Runner
	Engine engine.Engine
	// Names are the snapshot's volume and network names (NamesOf of LoadSnapshot).
	Names Names
	// Images also removes the images Compose built for the project.
	Images bool
}

// Remove runs `compose down --volumes` on the recorded snapshot and then verifies that no
// container, volume or network of the project remains. It is safe to repeat: a project that is
// already gone is removed again without error.
func Remove(ctx context.Context, opts RemoveOptions) error {
	downErr := opts.Runner.Down(ctx, DownOptions{Volumes: true, Images: opts.Images})
	goneErr := VerifyGone(ctx, opts.Engine, opts.Runner.Snapshot.Project, opts.Names)
	if goneErr == nil {
		// Nothing is left, whatever the plugin said (a warning exit over an absent object).
		return nil
	}
	return errors.Join(downErr, goneErr)
}
