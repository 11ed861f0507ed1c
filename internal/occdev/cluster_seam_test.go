package occdev

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// fakeSettings are the test provider's own settings, decided by its registration.
type fakeSettings struct{ Timeout string }

// fakeProvider is a cluster provider the flow has never heard of. It answers from fields and
// remembers what it was asked, so the test sees what the flow handed it.
type fakeProvider struct {
	name     string
	checkErr error
	ensure   error
	seen     []cluster.Request
	closed   int
}

func (f *fakeProvider) Name() string { return f.name }
func (f *fakeProvider) Describe(req cluster.Request) cluster.Description {
	f.seen = append(f.seen, req)
	d := step.Creates("fake cluster " + req.Name)
	d.Note = "the fake provider's note"
	return cluster.Description{Description: d, Preflight: "the fake cluster answers"}
}
func (f *fakeProvider) Check(req cluster.Request) error {
	f.seen = append(f.seen, req)
	return f.checkErr
}
func (f *fakeProvider) Preflight(context.Context, cluster.Request) error { return nil }
func (f *fakeProvider) Ensure(_ context.Context, req cluster.Request) (cluster.Access, error) {
	f.seen = append(f.seen, req)
	return cluster.Access{}, f.ensure
}
func (f *fakeProvider) NodeAddress(context.Context, cluster.Access) (string, error) { return "", nil }
func (f *fakeProvider) Close() error                                                { f.closed++; return nil }

// fakeImporter is the fake provider with the import capability.
type fakeImporter struct{ *fakeProvider }

func (fakeImporter) ImageImporter(context.Context, cluster.Request, cluster.Access) (images.Importer, error) {
	return nil, errors.New("not reached by this test")
}

// fakeTable is the real providers table with the two fakes added, each registered as a
// provider package would register it: a plan of its own settings (its cluster runs in the engine,
// so it locates it) and the given value to open.
func fakeTable(plain *fakeProvider, importing fakeImporter) map[string]cluster.Registration {
	table := providers()
	resolve := func(o cluster.Options, _ []cluster.Setting) (cluster.Plan, error) {
		if _, err := o.Engine(); err != nil {
			return cluster.Plan{}, err
		}
		return cluster.Plan{Name: "fake-one", Settings: fakeSettings{Timeout: o.Timeout.String()}}, nil
	}
	table[plain.name] = cluster.Registration{Name: plain.name, Resolve: resolve, Open: func() cluster.Provider { return plain }}
	table[importing.name] = cluster.Registration{Name: importing.name, Resolve: resolve, Open: func() cluster.Provider { return importing }}
	return table
}

// allSteps lists every step of the flow by "lane/name", lanes included.
func allSteps(steps []Step, lane string, out *[]string) {
	for _, s := range steps {
		*out = append(*out, lane+"/"+s.Name)
		for _, l := range s.Lanes {
			allSteps(l.Steps, l.Name, out)
		}
	}
}

// Someone adds a third cluster provider: one registration in the providers table. The flow shapes the
// cluster lane by what the provider can do (a cluster.Importer gets the image lanes, one without
// gets the connect step), hands it its own settings, describes it in the dry run by its own
// words, opens it when a run starts and closes it at the end, and keeps the record a failed
// Ensure says `down` must check, all without knowing the provider's name.
func TestAThirdClusterProviderIsOneTableEntry(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	plain := &fakeProvider{name: "fakeconnect"}
	importing := fakeImporter{&fakeProvider{name: "fakeimport"}}
	table := fakeTable(plain, importing)
	opts := UpOptions{StateDir: filepath.Join(t.TempDir(), "state"), Docker: dockerAt("unix:///nonexistent/docker.sock")}

	for _, c := range []struct {
		fake      *fakeProvider
		want, not []string
	}{
		{plain, []string{"cluster/Connect to the cluster (fakeconnect)"}, []string{"gateway/Verify the OpenShell Gateway image in the node and tag it for the chart"}},
		{importing.fakeProvider, []string{"cluster/Pull the k3s node image", "gateway/Verify the OpenShell Gateway image in the node and tag it for the chart", "gateway/Import the OpenShell Gateway image into the cluster"},
			[]string{"cluster/Connect to the cluster (fakeimport)"}},
	} {
		o := opts
		o.ClusterProvider = c.fake.name
		p, err := resolvePlanWith(table, o)
		if err != nil {
			t.Fatalf("%s: %v", c.fake.name, err)
		}
		var names []string
		allSteps(upSteps(p), "", &names)
		for _, w := range c.want {
			if !slices.Contains(names, w) {
				t.Errorf("%s: no step %q in %q", c.fake.name, w, names)
			}
		}
		for _, n := range c.not {
			if slices.Contains(names, n) {
				t.Errorf("%s: step %q in %q", c.fake.name, n, names)
			}
		}
		if c.fake == importing.fakeProvider && !slices.Contains(names, "fakeimport/Create fakeimport cluster "+p.ClusterName) {
			t.Errorf("the importing provider's own lane is missing: %q", names)
		}
		if d := describeCluster(p); d.Note != "the fake provider's note" || len(d.Creates) != 1 {
			t.Errorf("%s: the dry run describes the cluster as %+v", c.fake.name, d)
		}
		if d := describePreflight(p); !strings.Contains(d.Note, "that the fake cluster answers, before anything is downloaded") {
			t.Errorf("%s: the dry run describes the preflight as %q", c.fake.name, d.Note)
		}
		if got := c.fake.seen[len(c.fake.seen)-1].Settings; got != (fakeSettings{Timeout: "10m0s"}) {
			t.Errorf("%s: the provider saw settings %#v", c.fake.name, got)
		}
	}

	// A run opens its provider, and the preflight asks it first.
	plain.checkErr = errors.New("the fake provider refuses this request")
	o := opts
	o.ClusterProvider = plain.name
	p, err := resolvePlanWith(table, o)
	if err != nil {
		t.Fatal(err)
	}
	closed := plain.closed
	r := &run{plan: p, provider: p.openProvider()}
	if err := preflight(context.Background(), r, progress.Reporter{}); !errors.Is(err, plain.checkErr) {
		t.Errorf("preflight = %v, want the provider's refusal", err)
	}
	// A failed Ensure that left a record is kept for the rollback, by what the provider said.
	record := state.Object{Type: "fake-cluster", Name: "fake-one"}
	plain.ensure = &cluster.KeptError{Record: record, Err: errors.New("the fake cluster did not start")}
	if err := connectCluster(context.Background(), r, progress.Reporter{}); err == nil || err.Error() != "the fake cluster did not start" {
		t.Errorf("connectCluster = %v, want the provider's error as it is", err)
	}
	if kept := r.keptCluster.Load(); kept == nil || kept.Type != record.Type || kept.Name != record.Name {
		t.Errorf("kept record = %+v, want %+v", kept, record)
	}
	r.close()
	if plain.closed != closed+1 {
		t.Errorf("the run closed its provider %d times, want once", plain.closed-closed)
	}
}

// k3dAllowed are the names of package k3d the flow may use: the registry entry, what the plan
// document shows of its settings, and the constants of its options and records. Calling into the
// provider, holding one, checking its settings or asking whether a provider is k3d's is not
// among them.
var k3dAllowed = map[string]bool{
	"Name": true, "Registration": true, "Shown": true, "NodeDNS": true, "TypeCluster": true,
	"EnvK3sImage": true, "SelectNodeImage": true, "NodeImageSelection": true,
}

// A later change reaches around the cluster seam again (a k3d provider held in the plan, the
// k3d importer called from a step, a type assertion on the provider): the flow's own files name
// package k3d only for its registry line, its settings and its constants.
func TestTheFlowNeverReachesAroundTheClusterSeam(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				// The registry is the one place that builds the provider.
				if n.Name.Name == "providers" {
					return false
				}
			case *ast.TypeAssertExpr:
				if n.Type != nil && strings.Contains(exprString(n.Type), "k3d.") {
					t.Errorf("%s: the flow asserts a provider to %s", fset.Position(n.Pos()), exprString(n.Type))
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "k3d" && id.Obj == nil {
					if !k3dAllowed[n.Sel.Name] || n.Sel.Name == "ClusterProvider" {
						t.Errorf("%s: the flow uses k3d.%s outside the cluster seam", fset.Position(n.Pos()), n.Sel.Name)
					}
				}
				if n.Sel.Name == "k3d" {
					t.Errorf("%s: the flow reaches a k3d field (%s)", fset.Position(n.Pos()), exprString(n))
				}
			}
			return true
		})
	}
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	}
	return "?"
}

// The OpenShell images download one after another, each lane's pull waiting for the one before
// it in images.PullTurns: the Sandbox image first (the largest: its import into the node takes
// longest, and so overlaps the others' downloads; on the bed's Docker 29 with a 25 MB/s link,
// BenchmarkUpAgainstCLIs, up took 26.0 s against 29.5 s in pin order), then the Gateway's and the
// supervisor's.
func TestTheSandboxImageDownloadsFirstEachPullAfterTheOneBefore(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	importing := fakeImporter{&fakeProvider{name: "fakeimport"}}
	p, err := resolvePlanWith(fakeTable(&fakeProvider{name: "fakeconnect"}, importing), UpOptions{ClusterProvider: "fakeimport", StateDir: filepath.Join(t.TempDir(), "state"), Docker: dockerAt("unix:///nonexistent/docker.sock")})
	if err != nil {
		t.Fatal(err)
	}
	steps := clusterLane(p).Steps
	group := steps[len(steps)-1]
	var lanes []string
	for _, l := range group.Lanes {
		lanes = append(lanes, l.Name)
	}
	if want := []string{"fakeimport", "gateway", "sandbox", "supervisor", "import", "platform"}; !slices.Equal(lanes, want) {
		t.Fatalf("the cluster group's lanes are %q, want %q", lanes, want)
	}

	// A lane's pull waits for the pull before it in turn (images.Slots.InTurn): on a cancelled
	// run the supervisor image's pull ends with the cancellation, before the Gateway image's has
	// had its turn, and so does the Gateway's, before the Sandbox image's; neither reaches the
	// engine (the run has none: a pull that does not wait reaches for it and panics). The
	// supervisor's goes first: a pull passes its turn when it ends, however it ends.
	r := &run{plan: p}
	r.makeImageSlots()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, l := range []int{3, 1} {
		pull := group.Lanes[l].Steps[0]
		err := func() (err error) {
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("it did not wait for its turn and reached for the engine: %v", v)
				}
			}()
			return pull.Run(ctx, r, progress.Reporter{})
		}()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%q on a cancelled run before its turn ended with %v, want context.Canceled", pull.Name, err)
		}
	}
}

// The Gateway install waits for the images its chart's own objects start (the render check's
// finding), each verified by its lane, and for nothing else: with the Gateway image verified it
// runs while the Sandbox and supervisor images are still on their way; without it, it never runs
// and ends with the run's cancellation. The platform lane's first step waits for both the
// cluster and the artifacts.
func TestTheGatewayInstallWaitsOnlyForTheImagesItsChartStarts(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	importing := fakeImporter{&fakeProvider{name: "fakeimport"}}
	p, err := resolvePlanWith(fakeTable(&fakeProvider{name: "fakeconnect"}, importing), UpOptions{ClusterProvider: "fakeimport", StateDir: filepath.Join(t.TempDir(), "state"), Docker: dockerAt("unix:///nonexistent/docker.sock")})
	if err != nil {
		t.Fatal(err)
	}
	product := images.GatewaySlots(p.pins)
	gateway, sandbox := product[0], product[1]
	if p.image(gateway).Role != "gateway" || p.image(sandbox).Role != "sandbox" {
		t.Fatalf("the first two OpenShell images are %q and %q, want the Gateway's and the Sandbox's", p.image(gateway).Role, p.image(sandbox).Role)
	}
	ran := 0
	stub := func(s Step) Step {
		s.Run = func(context.Context, *run, progress.Reporter) error { ran++; return nil }
		return s
	}
	install := startedImagesFirst(stub(Step{Name: gatewayInstallStep, Describe: describeGateway}))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	r := &run{plan: p, gatewayStarts: []pins.Image{p.image(gateway).Image}}
	r.makeImageSlots()
	if err := install.Run(cancelled, r, progress.Reporter{}); !errors.Is(err, context.Canceled) || ran != 0 {
		t.Fatalf("with no image verified the install returned %v after %d runs, want context.Canceled and none", err, ran)
	}
	r.slots.InNode(gateway).Set()
	if err := install.Run(context.Background(), r, progress.Reporter{}); err != nil || ran != 1 {
		t.Fatalf("with the Gateway image verified (the Sandbox and supervisor images not) the install returned %v after %d runs, want it run once", err, ran)
	}

	// A chart that starts the Sandbox image too (a warm pool, say) holds the install until it is
	// verified as well.
	r = &run{plan: p, gatewayStarts: []pins.Image{p.image(gateway).Image, p.image(sandbox).Image}}
	r.makeImageSlots()
	r.slots.InNode(gateway).Set()
	if err := install.Run(cancelled, r, progress.Reporter{}); !errors.Is(err, context.Canceled) || ran != 1 {
		t.Fatalf("with the Sandbox image started by the chart and not verified the install returned %v after %d runs, want context.Canceled and no run", err, ran)
	}
	r.slots.InNode(sandbox).Set()
	if err := install.Run(context.Background(), r, progress.Reporter{}); err != nil || ran != 2 {
		t.Fatalf("with both verified the install returned %v after %d runs, want it run", err, ran)
	}
	if d := install.Describe(p); !strings.Contains(d.Note, "images the chart's own objects start") {
		t.Errorf("the dry run of the install does not say what it waits for: %+v", d)
	}

	// The platform's first step needs the cluster and the artifacts.
	ready := func(cluster, artifacts bool) *run {
		r := &run{plan: p, gatewayStarts: []pins.Image{p.image(gateway).Image}}
		r.makeImageSlots()
		if cluster {
			r.cluster.Set()
		}
		if artifacts {
			r.artifacts.Set()
		}
		return r
	}
	for _, c := range []struct {
		name               string
		cluster, artifacts bool
	}{{"neither", false, false}, {"the cluster alone", true, false}, {"the artifacts alone", false, true}} {
		if err := waiting(stub(Step{}), clusterMade, func(r *run) *readiness { return &r.artifacts }).Run(cancelled, ready(c.cluster, c.artifacts), progress.Reporter{}); !errors.Is(err, context.Canceled) || ran != 2 {
			t.Errorf("with %s ready the step waiting on both returned %v after %d runs, want context.Canceled and no run", c.name, err, ran)
		}
	}
	if err := waiting(stub(Step{}), clusterMade, func(r *run) *readiness { return &r.artifacts }).Run(context.Background(), ready(true, true), progress.Reporter{}); err != nil || ran != 3 {
		t.Errorf("with both ready the step waiting on both returned %v after %d runs, want it run", err, ran)
	}

	// The lane is wired so: its real first step and its real install, on a run whose cluster,
	// artifacts or Gateway image is missing, end with the cancellation instead of reaching a
	// connection that does not exist yet.
	lane := platformLane(p)
	if lane.Steps[0].Name != "Create the platform namespace" {
		t.Fatalf("the platform lane begins with %q", lane.Steps[0].Name)
	}
	for _, r := range []*run{ready(false, true), ready(true, false)} {
		if err := lane.Steps[0].Run(cancelled, r, progress.Reporter{}); !errors.Is(err, context.Canceled) {
			t.Errorf("the platform lane's first step without the cluster or the artifacts returned %v, want context.Canceled", err)
		}
	}
	for _, s := range lane.Steps {
		if s.Name == gatewayInstallStep {
			if err := s.Run(cancelled, ready(true, true), progress.Reporter{}); !errors.Is(err, context.Canceled) {
				t.Errorf("the platform lane's install without the Gateway image verified returned %v, want context.Canceled", err)
			}
		}
	}
}

// `occ dev status` reports the cluster's state from the record its provider keeps (a
// cluster.Keeper), found by the recorded provider's name, never by a provider the flow names: a
// provider that only uses a cluster, or a name this occ does not know, keeps none.
func TestStatusFindsTheClusterRecordThroughItsProvider(t *testing.T) {
	for provider, want := range map[string]state.Type{"k3d": "k3d-cluster", "existing": "", "nosuchprovider": ""} {
		if got := clusterRecordType(provider); got != want {
			t.Errorf("the record type of provider %q is %q, want %q", provider, got, want)
		}
	}
}
