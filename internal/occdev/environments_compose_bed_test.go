package occdev_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Two worktrees of OCE each bring up an environment of the default profile, the control plane
// in Compose with the k3d cluster on the project's network (one through the library, one through
// the built binary with --name), neither giving a Compose project, a host port or a subnet: each
// gets its own project (named after the environment), its own API, PostgreSQL and Kubernetes API
// ports and its own network subnet, all recorded in its state; `occ dev list` shows both healthy; and each `down` leaves the
// other's cluster, Compose containers, volumes and network, and state exactly as they were.
func TestComposeEnvironmentsSideBySide(t *testing.T) {
	// The binary is built before the bed moves HOME (and with it Go's build cache).
	startBuild()
	b := newComposeBed(t)
	b.forgetProducts(t)
	start := time.Now()
	lap := func(what string) { t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond)) }
	bin := buildOCC(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, k := range []string{state.EnvDirectory, state.EnvEnvironment, compose.EnvProject, "OPENCLAW_DEV_PORT", "OCC_POSTGRES_PORT", "OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	// Names of this run's own, so that no project of an earlier run on the shared engine meets
	// them.
	suffix := strings.ToLower(rand.Text()[:6])
	names := []string{"one-" + suffix, "two-" + suffix}
	oneDir, _ := state.EnvironmentDir(names[0])
	twoDir, _ := state.EnvironmentDir(names[1])
	downAtEnd(t, oneDir)
	downAtEnd(t, twoDir)

	// The settings of neither name a project, a port or a subnet.
	one := b.run(t)
	one.settings.Project = "openclaw-enterprise-development-kubernetes-" + names[0]
	one.opts.StateDir, one.opts.Environment, one.opts.OCE.ComposeProject = "", names[0], ""
	one.opts.OCE.Environment = map[string]string{}
	if _, err := occdev.Up(context.Background(), one.opts); err != nil {
		t.Fatalf("up of environment %s: %v", names[0], err)
	}
	lap("up of one")

	two := b.run(t)
	two.settings.Project = "openclaw-enterprise-development-kubernetes-" + names[1]
	env := append(os.Environ(), "XDG_CACHE_HOME="+two.opts.CacheDir, "DOCKER_CONFIG="+b.dockerConfig,
		controlplane.EnvNodeBaseImage+"="+b.nodeBase, controlplane.EnvNodeRuntimeBaseImage+"="+b.nodeRuntimeBase)
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = two.checkout, env
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, errOut, err := run("dev", "up", "--name", names[1], "--cluster-name", two.opts.K3d().ClusterName, "--pin-file", b.pinFile,
		"--openshell-archive", b.archive, "--gateway-endpoint", two.opts.GatewayEndpoint, "--startup-timeout", "3m", "--", "-f", "build-network.yaml")
	if err != nil {
		t.Fatalf("occ dev up --name %s: %v\nstdout:\n%s\nstderr:\n%s", names[1], err, out, errOut)
	}
	lap("up --name two")
	if !strings.Contains(out, twoDir) || !strings.Contains(out, "Compose (project "+two.settings.Project) {
		t.Errorf("up --name %s does not name its state directory %s and project %s:\n%s", names[1], twoDir, two.settings.Project, out)
	}

	// Each state records its project, its ports and its subnet; no two of them are the same or
	// overlap, none is a default's, and the containers publish exactly the recorded ports on a
	// network of the recorded subnet.
	used := map[int]string{3000: "the default OPENCLAW_DEV_PORT", 55432: "the default OCC_POSTGRES_PORT"}
	claim := func(port int, what string) {
		if other, ok := used[port]; ok {
			t.Errorf("%s is port %d, also %s", what, port, other)
		}
		used[port] = what
	}
	apiURLs := map[string]string{}
	subnets := []netip.Prefix{netip.MustParsePrefix("172.30.41.0/24")}
	for i, r := range []*composeRun{one, two} {
		dir := []string{oneDir, twoDir}[i]
		st := mustState(t, dir)
		cp := st.ControlPlane
		if cp == nil || cp.Compose == nil || cp.Compose.Project != r.settings.Project {
			t.Fatalf("%s records the control plane %+v, want the Compose project %s", names[i], cp, r.settings.Project)
		}
		dev, pg := cp.HostPorts["OPENCLAW_DEV_PORT"], cp.HostPorts["OCC_POSTGRES_PORT"]
		if dev == 0 || pg == 0 || len(cp.HostPorts) != 2 {
			t.Fatalf("%s records the host ports %v, want OPENCLAW_DEV_PORT and OCC_POSTGRES_PORT", names[i], cp.HostPorts)
		}
		claim(dev, names[i]+"'s OPENCLAW_DEV_PORT")
		claim(pg, names[i]+"'s OCC_POSTGRES_PORT")
		if want := fmt.Sprintf("http://127.0.0.1:%d", dev); cp.APIURL != want {
			t.Errorf("%s records the API URL %s, want %s", names[i], cp.APIURL, want)
		}
		apiURLs[names[i]] = cp.APIURL
		server, err := url.Parse(st.Cluster.Server)
		if err != nil {
			t.Fatal(err)
		}
		kubePort, _ := strconv.Atoi(server.Port())
		claim(kubePort, names[i]+"'s Kubernetes API port")
		for svc, port := range map[string]int{"controller": dev, "postgres": pg} {
			if got := publishedPorts(t, b, r.settings.Project, svc); !slices.Equal(got, []string{fmt.Sprintf("127.0.0.1:%d", port)}) {
				t.Errorf("%s's %s publishes %v, want 127.0.0.1:%d", names[i], svc, got, port)
			}
		}
		if st.Cluster.Network != r.network() {
			t.Errorf("%s's cluster is on the network %s, want its project's %s", names[i], st.Cluster.Network, r.network())
		}
		subnet, err := netip.ParsePrefix(cp.Subnet)
		if err != nil {
			t.Fatalf("%s records the subnet %q: %v", names[i], cp.Subnet, err)
		}
		for _, other := range subnets {
			if subnet.Overlaps(other) {
				t.Errorf("%s's subnet %s overlaps %s (the default's, or the other environment's)", names[i], subnet, other)
			}
		}
		subnets = append(subnets, subnet)
		if n, err := b.engine.API.NetworkInspect(context.Background(), r.network(), network.InspectOptions{}); err != nil || len(n.IPAM.Config) != 1 || n.IPAM.Config[0].Subnet != cp.Subnet {
			t.Errorf("%s's network %s has the IPAM config %+v (%v), want the subnet %s", names[i], r.network(), n.IPAM.Config, err, cp.Subnet)
		}
		if env := serviceContainer(t, b, r.settings.Project, "controller").Config.Env; !slices.Contains(env, "OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR="+cp.Subnet) {
			t.Errorf("%s's controller does not trust its bridge %s: %v", names[i], cp.Subnet, env)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	doc := listEnvironments(t, run, names[0], names[1])
	for i, r := range []*composeRun{one, two} {
		e, dir := doc.Environments[i], []string{oneDir, twoDir}[i]
		if e.Name != names[i] || e.StateDirectory != dir || e.Cluster != r.opts.K3d().ClusterName || e.Profile != string(occdev.ControlPlaneCompose) ||
			e.APIURL != apiURLs[names[i]] || e.Health != observe.HealthHealthy {
			t.Errorf("list entry %d = %+v, want %s in %s with cluster %s, Compose, API %s, healthy", i, e, names[i], dir, r.opts.K3d().ClusterName, apiURLs[names[i]])
		}
	}
	lap("list -o json")

	// Each down leaves the other: its cluster's containers, its project's containers, volumes
	// and network, its state, its health.
	twoBefore := environmentOnEngine(t, b, two, twoDir)
	oneVolumes := b.volumesOf(t, one.opts.K3d().ClusterName)
	if out, errOut, err := run("dev", "down", "--name", names[0]); err != nil {
		t.Fatalf("occ dev down --name %s: %v\n%s\n%s", names[0], err, out, errOut)
	}
	lap("down --name one")
	if !stateGone(oneDir) {
		t.Errorf("down --name %s left its state directory", names[0])
	}
	if left := b.projectLeftovers(t, one, oneVolumes); len(left) > 0 {
		t.Errorf("after down --name %s: %v", names[0], left)
	}
	if got := environmentOnEngine(t, b, two, twoDir); got != twoBefore {
		t.Errorf("%s after %s's down:\n%s\nwant it as it was:\n%s", names[1], names[0], got, twoBefore)
	}
	st, err := occdev.GetStatus(context.Background(), occdev.StatusOptions{Environment: names[1]})
	if err != nil || st.StateDirectory != twoDir || st.ClusterState != observe.ClusterExists || !st.Reachable || st.Unknown() != 0 ||
		st.ControlPlane == nil || st.ControlPlane.API != "ready" {
		t.Fatalf("%s after %s's down: %+v (%v), want its cluster there and answering and its API ready", names[1], names[0], st, err)
	}

	twoVolumes := b.volumesOf(t, two.opts.K3d().ClusterName)
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{Environment: names[1]}); err != nil {
		t.Fatalf("down of environment %s: %v", names[1], err)
	}
	lap("down of two")
	if !stateGone(twoDir) {
		t.Errorf("down of %s left its state directory", names[1])
	}
	if left := b.projectLeftovers(t, two, twoVolumes); len(left) > 0 {
		t.Errorf("after down of %s: %v", names[1], left)
	}
}

// publishedPorts are the host addresses a service's container publishes, as the engine has
// them.
func publishedPorts(t *testing.T, b *composeBed, project, service string) []string {
	t.Helper()
	var out []string
	for _, bindings := range serviceContainer(t, b, project, service).HostConfig.PortBindings {
		for _, pb := range bindings {
			out = append(out, pb.HostIP+":"+pb.HostPort)
		}
	}
	slices.Sort(out)
	return out
}

// environmentOnEngine describes what an environment has on the engine and in its state
// directory: its cluster's and its project's containers (ID and state), its project's volumes
// and networks, and its state file's content.
func environmentOnEngine(t *testing.T, b *composeBed, r *composeRun, dir string) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	for _, label := range []string{"k3d.cluster=" + r.opts.K3d().ClusterName, compose.LabelProject + "=" + r.settings.Project} {
		cs, err := b.engine.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 0 {
			t.Errorf("no container labelled %s", label)
		}
		for _, c := range cs {
			lines = append(lines, fmt.Sprintf("container %s %s %s", strings.Join(c.Names, ","), c.ID, c.State))
		}
	}
	res, err := compose.FindResources(ctx, b.engine.Verbs(), r.settings.Project, compose.Names{Networks: []string{r.network()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Volumes) == 0 || len(res.Networks) == 0 {
		t.Errorf("project %s has no volume or network: %s", r.settings.Project, res)
	}
	for _, v := range res.Volumes {
		lines = append(lines, "volume "+v)
	}
	for _, n := range res.Networks {
		lines = append(lines, "network "+n)
	}
	data, err := os.ReadFile(filepath.Join(dir, state.FileName))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\nstate " + string(bytes.TrimSpace(data))
}
