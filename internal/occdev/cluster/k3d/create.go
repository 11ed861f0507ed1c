package k3d

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	k3dclient "github.com/k3d-io/k3d/v5/pkg/client"
	k3dconfig "github.com/k3d-io/k3d/v5/pkg/config"
	k3dconf "github.com/k3d-io/k3d/v5/pkg/config/v1alpha5"
	k3dlog "github.com/k3d-io/k3d/v5/pkg/logger"
	k3druntimes "github.com/k3d-io/k3d/v5/pkg/runtimes"
	k3dtypes "github.com/k3d-io/k3d/v5/pkg/types"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// rollbackTimeout bounds the cleanup of a failed or cancelled creation. It runs on a fresh
// context, so a Ctrl-C that cancelled creation does not also cancel the cleanup.
const rollbackTimeout = 2 * time.Minute

// Create makes the cluster of req and returns how to reach it.
//
// The order is what makes a failure safe: the request is validated and the host and engine
// checked (the host kernel's legacy nat table, the images present, the network to join present,
// the ports free, no foreign cluster of that name) before anything exists; Docker Desktop's
// bridge resolver, when it is the node's, is read by a container the engine removes; the cluster
// is recorded through req.Recorder before k3d creates its first object; k3d runs under ctx; the
// kubeconfigs are written and the kube-system UID read once the API answers (Cluster.UID: the
// caller records it with the cluster's access) — on Docker as soon as k3s serves its API, when
// req.apiReady receives the cluster and the caller starts using it while k3d finishes (its CoreDNS
// records and the node's /etc/hosts), whose own end still decides the creation; then the node
// looks req.DNSCheckName up through its resolver, and a refusal fails the creation
// (CheckNodeDNS). If anything after the record
// fails, or ctx is cancelled, the half-made cluster is deleted on a fresh bounded context and the
// error says whether anything is left. The record is kept either way: `down` checks and forgets
// it, and never assumes a cluster is gone.
//
// A cluster of that name that this owner already created is adopted (kubeconfigs rewritten),
// which makes Create safe to repeat; leftovers of an earlier failed attempt are removed first.
func (p *Provider) Create(ctx context.Context, req Request) (*Cluster, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	id := Identity{Name: req.Name, Owner: req.Owner}
	st, leftovers, err := p.inspect(ctx, id)
	if err != nil {
		return nil, err
	}
	switch st.State {
	case StateNotOurs:
		return nil, fmt.Errorf("create k3d cluster %s: a cluster of that name already exists and was not created by this environment (%s): choose another %s, or remove it (k3d cluster delete %s)", req.Name, st.Reason, EnvClusterName, req.Name)
	case StateExists:
		if err := req.Recorder.Record(id.Object()); err != nil {
			return nil, fmt.Errorf("record k3d cluster %s: %w", req.Name, err)
		}
		if req.gate != nil {
			req.gate.open()
		}
		return p.finish(ctx, req)
	}
	cr := &creation{p: p, req: &req, id: id}
	if err := cr.prepare(ctx); err != nil {
		return nil, err
	}
	// From here on Docker objects may exist: the record comes first, so `down` can always find
	// them, even after a crash of this process.
	if err := req.Recorder.Record(id.Object()); err != nil {
		return nil, fmt.Errorf("record k3d cluster %s before creating it: %w", req.Name, err)
	}
	if st.State == StateIncomplete {
		// Leftovers of an earlier attempt of this owner: remove them so k3d starts clean.
		if err := p.remove(ctx, id, leftovers); err != nil {
			return nil, fmt.Errorf("create k3d cluster %s: remove what an earlier attempt left: %w", req.Name, err)
		}
	}
	c, err := cr.create(ctx)
	if err != nil {
		return nil, err
	}
	// The node runs with its resolver now: a resolver that refuses stops `up` here, before
	// anything is installed that would wait for a pull or a lookup that can never succeed.
	c.DNS = cr.dns
	if c.DNSCheck, err = p.CheckNodeDNS(ctx, req.Name, req.DNSCheckName, cr.dns, p.upstreamHint(cr.dns)); err != nil {
		return nil, p.rollback(ctx, id, err)
	}
	req.Progress.Note(c.DNSCheck.Note())
	return c, nil
}

// creation is one creation of a cluster by Create: the request, and what is found and written
// for it before k3d runs.
type creation struct {
	p   *Provider
	req *Request
	id  Identity
	// natUnsure says the host's kernel did not show whether it gives the node its legacy nat
	// table (preflight).
	natUnsure bool
	// admission is the admission file on the host; resolv the node's resolv.conf on the host
	// (empty without a chosen resolver), for the resolver dns chose.
	admission, resolv string
	dns               NodeDNS
}

// prepare checks the host and the engine, and writes the admission file and, when the node gets
// a chosen resolver, its resolv.conf. Nothing of the cluster exists yet.
func (cr *creation) prepare(ctx context.Context) error {
	var err error
	if cr.natUnsure, err = cr.p.preflight(ctx, cr.req); err != nil {
		return err
	}
	if cr.admission, err = writeAdmissionConfig(cr.req.StateDir, cr.req.PodSecurityExemptRuntimeClasses); err != nil {
		return err
	}
	if cr.dns, err = cr.p.nodeDNS(ctx, cr.req); err != nil {
		return err
	}
	if cr.dns.Address != "" {
		if cr.resolv, err = writeResolvConf(cr.req.StateDir, cr.dns.Address); err != nil {
			return err
		}
	}
	return nil
}

// hooks are the node hooks of the creation on Docker: the gate opens once the node is created,
// and the API is handed to apiUp once k3s serves it. On Podman a creation may be retried with a
// new node (createOnce), which would lose what went into the first: there the gate opens, and
// the API is handed over, only once k3d is done.
func (cr *creation) hooks(apiUp chan<- *clientcmdapi.Config) []k3dtypes.NodeHook {
	var hooks []k3dtypes.NodeHook
	if cr.p.engine.Registration().K3dPodman {
		return hooks
	}
	if cr.req.gate != nil {
		hooks = append(hooks, k3dtypes.NodeHook{Stage: k3dtypes.LifecycleStagePreStart, Action: nodeCreated{gate: cr.req.gate}})
	}
	if cr.req.apiReady != nil {
		hooks = append(hooks, k3dtypes.NodeHook{Stage: k3dtypes.LifecycleStagePostStart, Action: serverUp{cluster: cr.req.Name, kubeconfig: apiUp}})
	}
	return hooks
}

// create has k3d create the cluster and returns it once k3d is done, its kubeconfigs written. A
// creation that fails is rolled back, and the error says whether anything is left.
func (cr *creation) create(ctx context.Context) (*Cluster, error) {
	p, req, id := cr.p, cr.req, cr.id
	sc, fixDNS := req.simpleConfig(cr.admission, cr.resolv), fixDNSEnv(cr.dns.Address)
	apiUp := make(chan *clientcmdapi.Config, 1)
	hooks := cr.hooks(apiUp)
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	done := make(chan error, 1)
	go func() {
		done <- createOnce(runCtx, p.engine.Registration().K3dPodman,
			func() error { return p.run(runCtx, sc, []docker.EnvVar{fixDNS, tempDirEnv(req.StateDir)}, hooks) },
			func() error {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
				defer cancel()
				return p.Delete(rctx, id)
			},
			func(msg string) { k3dlog.Log().Warn(msg) })
	}()
	// k3s serves its API a few seconds before k3d is done (k3d then writes the host's records
	// into CoreDNS and the nodes' /etc/hosts): the caller gets the cluster there, and what it
	// installs overlaps k3d's last steps. k3d's own end still decides whether the creation worked.
	var c *Cluster
	var err error
	select {
	case kc := <-apiUp:
		if c, err = p.finishWith(ctx, *req, kc); err == nil {
			err = req.apiReady(c)
		}
		if err != nil {
			cancelRun()
			<-done
			return nil, p.rollback(ctx, id, err)
		}
		err = <-done
	case err = <-done:
	}
	if err != nil {
		if cr.natUnsure {
			err = fmt.Errorf("%w (%s)", err, natFailureHint)
		}
		return nil, p.rollback(ctx, id, err)
	}
	if c == nil {
		if c, err = p.finish(ctx, *req); err != nil {
			return nil, p.rollback(ctx, id, err)
		}
	}
	return c, nil
}

// upstreamHint is this host's upstream resolver, suggested when k3d's own handling of the node's
// DNS refused: only for Docker on Linux, where the host's resolvers are the engine's.
func (p *Provider) upstreamHint(dns NodeDNS) string {
	if dns.Address != "" || p.engine.Registration().K3dPodman || p.host.os != "linux" {
		return ""
	}
	addr, _, _ := hostUpstream(p.host.root)
	return addr
}

// preflight checks the engine side of the request without changing anything: natUnsure says
// the host's kernel did not show whether it gives the node its legacy nat table (checkHostNAT).
func (p *Provider) preflight(ctx context.Context, req *Request) (natUnsure bool, err error) {
	if natUnsure, _, err = p.checkHostNAT(ctx); err != nil {
		return false, err
	}
	return natUnsure, p.preflightEngine(ctx, req)
}

// preflightEngine checks the images, the network and the ports the request needs.
func (p *Provider) preflightEngine(ctx context.Context, req *Request) error {
	eng := p.engine.Verbs()
	if p.tools == "" {
		return errors.New("create k3d cluster: the provider has no tools image (pins k3d.toolsImage); k3d would pull its unpinned default")
	}
	for _, img := range []struct{ what, ref, fix string }{
		{"node image", req.NodeImage.DigestReference(), "pull the pinned k3s image by digest first (the image step does)"},
		{"tools image", p.tools, "pull the pinned k3d tools image by digest first (the image step does)"},
	} {
		if _, err := eng.Image(ctx, img.ref); err != nil {
			if engine.IsNotFound(err) {
				return requestError(img.what, img.ref, "is not in the "+p.engine.Name()+" engine, and occ does not let k3d pull images by itself", img.fix)
			}
			return fmt.Errorf("inspect %s %s: %w", img.what, img.ref, err)
		}
	}
	if req.Network != "" {
		if _, err := eng.Inspect(ctx, engine.Networks, req.Network); err != nil {
			if engine.IsNotFound(err) {
				// k3d would create a missing network and then never delete it (it counts a named
				// network as external), so a missing one is refused here.
				return requestError("network", req.Network, "does not exist", "create the network first (the Compose profile creates <project>_development), or leave it empty")
			}
			return fmt.Errorf("inspect network %s: %w", req.Network, err)
		}
	}
	ports := []struct {
		what string
		port int
	}{{"API port", req.APIPort}}
	for i, m := range req.Publish {
		ports = append(ports, struct {
			what string
			port int
		}{fmt.Sprintf("ports[%d].hostPort", i), m.HostPort})
	}
	for _, pt := range ports {
		if err := portFree(pt.port); err != nil {
			return requestError(pt.what, strconv.Itoa(pt.port), "is already in use on "+apiHost+" ("+err.Error()+")", "choose a free port")
		}
	}
	return nil
}

func portFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(apiHost, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// FreeLoopbackPort returns a port that is free on 127.0.0.1 now and is none of taken (ports
// chosen for others that are not bound yet: the system may hand out a free port twice), for the
// API. k3d's library does not choose one (only its CLI does); another process could take it
// before k3d binds it, in which case creation fails and rolls back.
func FreeLoopbackPort(taken ...int) (int, error) { return freePort(listenFree, taken) }

// freePort asks free for a port up to 16 times until it is none of taken.
func freePort(free func() (int, error), taken []int) (int, error) {
	for range 16 {
		port, err := free()
		if err != nil || !slices.Contains(taken, port) {
			return port, err
		}
	}
	return 0, fmt.Errorf("find a free port on %s other than %v: none found in 16 tries", apiHost, taken)
}

// listenFree is a port free on 127.0.0.1 now, as the system chooses it.
func listenFree() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(apiHost, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", apiHost, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run has k3d turn the configuration into a cluster: the same transform, process and validate
// steps as `k3d cluster create --config`, then ClusterRun. k3d's own rollback is off (occ's
// rollback checks ownership first) and its kubeconfig writing never runs (occ writes its own).
// env is this creation's environment (its DNS fix setting, its temporary directory); k3d's memo
// of its fixes is dropped first, so the setting counts even after an earlier creation in the
// same process.
func (p *Provider) run(ctx context.Context, sc k3dconf.SimpleConfig, env []docker.EnvVar, hooks []k3dtypes.NodeHook) error {
	return p.withK3d(func() error {
		for _, v := range env {
			if v.Name == "TMPDIR" {
				if err := os.MkdirAll(v.Value, 0o700); err != nil {
					return fmt.Errorf("k3d's temporary directory: %w", err)
				}
			}
		}
		restore, err := docker.PinK3dEnvironment(env)
		if err != nil {
			return err
		}
		defer restore()
		forgetK3dFixes()
		rt := k3druntimes.Docker
		if err := k3dconfig.ProcessSimpleConfig(&sc); err != nil {
			return fmt.Errorf("k3d configuration: %w", err)
		}
		cc, err := k3dconfig.TransformSimpleToClusterConfig(ctx, rt, sc, "")
		if err != nil {
			return fmt.Errorf("k3d configuration: %w", err)
		}
		if cc, err = k3dconfig.ProcessClusterConfig(*cc); err != nil {
			return fmt.Errorf("k3d configuration: %w", err)
		}
		if err := k3dconfig.ValidateClusterConfig(ctx, rt, *cc); err != nil {
			return fmt.Errorf("k3d configuration: %w", err)
		}
		cc.ClusterCreateOpts.NodeHooks = append(cc.ClusterCreateOpts.NodeHooks, hooks...)
		runCtx, cancel := context.WithCancel(ctx)
		err = k3dclient.ClusterRun(runCtx, rt, cc)
		// ClusterRun starts the tools node in a goroutine it does not wait for when node
		// creation fails. Cancelling its context and then passing through k3d's tools-node
		// mutex means that goroutine has either finished or can no longer create anything, so
		// the rollback's count of leftovers is final.
		cancel()
		k3dclient.EnsureToolsNodeMutex.Lock()
		k3dclient.EnsureToolsNodeMutex.Unlock()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("k3d cluster creation interrupted: %w", ctx.Err())
			}
			return fmt.Errorf("k3d cluster creation: %w", err)
		}
		return nil
	})
}

// TempDirName is the directory in the state directory where k3d writes its temporary files
// during the creation. k3d writes the nodes' hosts file through a temporary file it never
// removes (k3d v5.9.0, pkg/client/hooks.go); kept in the state directory, it goes with `down`,
// whether `up` finished, failed or was killed, and never piles up in the user's /tmp.
const TempDirName = "tmp"

// tempDirEnv points the temporary files of the k3d calls it is pinned for into stateDir.
func tempDirEnv(stateDir string) docker.EnvVar {
	return docker.EnvVar{Name: "TMPDIR", Value: filepath.Join(stateDir, TempDirName)}
}

// rollback deletes the half-made cluster of id after a failed creation, on a fresh context.
func (p *Provider) rollback(ctx context.Context, id Identity, cause error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err := p.Delete(rctx, id); err != nil {
		return errors.Join(
			fmt.Errorf("create k3d cluster %s: %w", id.Name, cause),
			fmt.Errorf("roll back k3d cluster %s (its record is kept for occ dev down): %w", id.Name, err))
	}
	return fmt.Errorf("create k3d cluster %s (rolled back: no container, network or volume of it is left): %w", id.Name, cause)
}
