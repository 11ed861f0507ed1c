package step

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/progress"
)

// flow and layer stand for the flow's run and a layer's own state (the Kubernetes-only control
// plane) in the Adapt tests.
type (
	flow  struct{ layer *layer }
	layer struct{ ran []string }
)

// layerSteps is a layer's step list as a control plane builds it: two plain steps around a group
// of two lanes, each step describing itself from the layer's configuration (a namespace here)
// and recording on the layer that it ran.
func layerSteps() []Step[string, *layer] {
	mk := func(name string) Step[string, *layer] {
		return Step[string, *layer]{
			Name:     name,
			Describe: func(ns string) Description { return Creates(name + " in " + ns) },
			Run: func(_ context.Context, l *layer, _ progress.Reporter) error {
				l.ran = append(l.ran, name)
				return nil
			},
		}
	}
	return []Step[string, *layer]{
		mk("First"),
		Concurrently("Group", InLane("a", mk("A1"), mk("A2")), InLane("b", mk("B1"))),
		mk("Last"),
	}
}

// The flow maps a control plane's steps into its own list: every adapted step keeps its name,
// place and lane, describes itself from the configuration the flow derives from its plan, and
// runs its own Run (not a neighbour's) on the state the flow hands it.
func TestAdaptKeepsNamesLanesAndOrderAndRunsEachStepOnTheLayer(t *testing.T) {
	l := &layer{}
	gets := 0
	steps := Adapt(layerSteps(), func(plan int) string { return "ns" + strings.Repeat("x", plan) },
		func(_ context.Context, f *flow) (*layer, error) { gets++; return f.layer, nil })

	var names []string
	var walk func(prefix string, steps []Step[int, *flow])
	walk = func(prefix string, steps []Step[int, *flow]) {
		for _, s := range steps {
			names = append(names, prefix+s.Name)
			for _, ln := range s.Lanes {
				walk(prefix+s.Name+"/"+ln.Name+":", ln.Steps)
			}
		}
	}
	walk("", steps)
	if got, want := strings.Join(names, ","), "First,Group,Group/a:A1,Group/a:A2,Group/b:B1,Last"; got != want {
		t.Fatalf("adapted steps %s; want %s", got, want)
	}

	if d := steps[0].Describe(2); len(d.Creates) != 1 || d.Creates[0] != "First in nsxx" {
		t.Errorf("the first step describes %+v; want it described from the flow's plan", d)
	}
	if d := steps[1].Lanes[0].Steps[1].Describe(0); len(d.Creates) != 1 || d.Creates[0] != "A2 in ns" {
		t.Errorf("a lane step describes %+v", d)
	}
	if steps[1].Run != nil || steps[1].Describe != nil {
		t.Error("the group gained a Run or a Describe it did not have")
	}

	x := &Runner[int, *flow]{Sequential: true}
	if err := x.Run(context.Background(), &flow{layer: l}, steps, ""); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(l.ran, ","), "First,A1,A2,B1,Last"; got != want {
		t.Fatalf("the layer ran %s; want %s", got, want)
	}
	if gets != 5 {
		t.Errorf("the layer was fetched %d times; want once per step that runs (5)", gets)
	}
}

// The flow cannot build the control plane (its connection is not set): the adapted step fails
// with that error, named by the step, and the layer's Run never starts.
func TestAdaptedStepFailsWhenTheLayerCannotBeHad(t *testing.T) {
	noConn := errors.New("no cluster connection")
	ran := false
	steps := Adapt([]Step[string, *layer]{{Name: "Install", Run: func(context.Context, *layer, progress.Reporter) error {
		ran = true
		return nil
	}}}, func(int) string { return "" }, func(context.Context, *flow) (*layer, error) { return nil, noConn })
	x := &Runner[int, *flow]{}
	err := x.Run(context.Background(), &flow{}, steps, "")
	if !errors.Is(err, noConn) || !strings.HasPrefix(err.Error(), "Install: ") {
		t.Fatalf("error %v; want the missing layer's error named by the step", err)
	}
	if ran {
		t.Fatal("the layer's step ran without its layer")
	}
}

// A lane waits for the cluster that a sibling lane starts: Wait blocks until Set, Set is safe to
// repeat, a zero Readiness needs no constructor, and a Wait whose context ends first (the
// sibling failed) returns the context's error.
func TestReadiness(t *testing.T) {
	var r Readiness
	done := make(chan error)
	go func() { done <- r.Wait(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before Set", err)
	default:
	}
	r.Set()
	if err := <-done; err != nil {
		t.Fatalf("Wait after Set: %v", err)
	}
	r.Set()
	if err := r.Wait(context.Background()); err != nil {
		t.Fatalf("Wait on a Readiness set twice: %v", err)
	}

	var never Readiness
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := never.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an unset Readiness with an ended context: %v", err)
	}
}

// The sequential seam runs the lanes one after another in their order, and a failure in a lane
// stops the lanes after it.
func TestSequentialRunsLanesInOrderAndStopsAtAFailure(t *testing.T) {
	var ran []string
	rec := func(name string, err error) testStep {
		return testStep{Name: name, Run: func(context.Context, *env, progress.Reporter) error {
			ran = append(ran, name)
			return err
		}}
	}
	boom := errors.New("boom")
	x := &Runner[struct{}, *env]{Sequential: true}
	err := x.Run(context.Background(), nil, []testStep{Concurrently("Group",
		InLane("a", rec("A1", nil), rec("A2", nil)),
		InLane("b", rec("B1", boom), rec("B2", nil)),
		InLane("c", rec("C1", nil)),
	)}, "")
	if !errors.Is(err, boom) {
		t.Fatalf("error %v; want the lane's failure", err)
	}
	if got := strings.Join(ran, ","); got != "A1,A2,B1" {
		t.Fatalf("ran %s; want A1,A2,B1", got)
	}
}

// Ctrl-C between two steps: the next step does not start and the error names it.
func TestRunStopsBeforeAStepOnceTheContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	secondRan := false
	x := &Runner[struct{}, *env]{}
	err := x.Run(ctx, nil, []testStep{
		{Name: "First", Run: func(context.Context, *env, progress.Reporter) error { cancel(); return nil }},
		{Name: "Second", Run: func(context.Context, *env, progress.Reporter) error { secondRan = true; return nil }},
	}, "")
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "Second: ") {
		t.Fatalf("error %v; want the cancellation named by the step that did not start", err)
	}
	if secondRan {
		t.Fatal("a step started after the context ended")
	}
}

// `occ dev up --dry-run -o json` prints a note step with an empty list of what it creates, not
// null, and leaves the note out of a step that creates something.
func TestDescriptionJSON(t *testing.T) {
	for _, c := range []struct {
		d    Description
		want string
	}{
		{Note("nothing; reads a Pod"), `{"creates":[],"note":"nothing; reads a Pod"}`},
		{Creates("Secret ns/a", "Secret ns/b"), `{"creates":["Secret ns/a","Secret ns/b"]}`},
	} {
		b, err := json.Marshal(c.d)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("JSON %s; want %s", b, c.want)
		}
	}
}

// A step that creates a namespaced Secret and a cluster-scoped binding is printed one line per
// object, derived from the objects themselves, and its JSON carries both.
func TestObjectsDeriveTheCreatesLines(t *testing.T) {
	d := Objects(
		Object{Kind: "Secret", Namespace: "oce-system", Name: "occ-auth", Note: "key secret"},
		Object{Kind: "ClusterRoleBinding", Name: "tenant-worker"},
	)
	if got, want := strings.Join(d.Creates, "|"), "Secret oce-system/occ-auth (key secret)|ClusterRoleBinding tenant-worker"; got != want {
		t.Fatalf("lines %q; want %q", got, want)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"creates":["Secret oce-system/occ-auth (key secret)","ClusterRoleBinding tenant-worker"],"objects":[{"kind":"Secret","namespace":"oce-system","name":"occ-auth","note":"key secret"},{"kind":"ClusterRoleBinding","name":"tenant-worker"}]}`
	if string(b) != want {
		t.Fatalf("JSON %s; want %s", b, want)
	}
	if e := Objects(); e.Creates == nil || len(e.Creates) != 0 {
		t.Fatalf("no objects: creates %#v; want an empty list", e.Creates)
	}
}

// Images and files are typed like objects: each is one Creates line, in the order given, and
// the JSON keeps each kind in its own list.
func TestDescribeKeepsObjectsImagesAndFilesTyped(t *testing.T) {
	d := Describe(
		File{Kind: "directory", Path: "/s", Mode: "0700", Note: "locked"},
		Image{Reference: "ghcr.io/x/gw@sha256:ab", Where: "the node's containerd"},
		Object{Kind: "Namespace", Name: "openshell"},
		File{Kind: "file", Path: "/s/installation.yaml", Mode: "0644"},
	)
	want := []string{
		"directory /s (0700; locked)",
		"image ghcr.io/x/gw@sha256:ab in the node's containerd",
		"Namespace openshell",
		"file /s/installation.yaml (0644)",
	}
	if got := strings.Join(d.Creates, "|"); got != strings.Join(want, "|") {
		t.Fatalf("lines %q; want %q", d.Creates, want)
	}
	if len(d.Objects) != 1 || len(d.Images) != 1 || len(d.Files) != 2 || d.Files[1].Path != "/s/installation.yaml" {
		t.Fatalf("typed lists: objects %v, images %v, files %v", d.Objects, d.Images, d.Files)
	}
	b, err := json.Marshal(Describe(Image{Reference: "r@sha256:1", Where: "w", Note: "n"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"creates":["image r@sha256:1 in w (n)"],"images":[{"reference":"r@sha256:1","where":"w","note":"n"}]}`; string(b) != want {
		t.Fatalf("JSON %s; want %s", b, want)
	}
}

// A step that waits for the Gateway's workloads and an endpoint creates nothing: its waits are
// their own list under "waits", never lines of what it creates.
func TestWaitsAreNotCreations(t *testing.T) {
	d := Note("nothing created").Waiting(
		Wait{Kind: "Helm release", Namespace: "openshell", Name: "openshell-gateway", Selects: "the Deployments and StatefulSets", Ready: "every replica is ready"},
		Wait{Kind: "endpoint", Name: "GET http://127.0.0.1:3000/api/auth/session", Ready: "it answers 2xx", Note: "polled"},
	)
	if len(d.Creates) != 0 {
		t.Fatalf("a wait became a creation: %q", d.Creates)
	}
	if got, want := d.Waits[0].String(), "the Deployments and StatefulSets of Helm release openshell/openshell-gateway until every replica is ready"; got != want {
		t.Errorf("line %q; want %q", got, want)
	}
	if got, want := d.Waits[1].String(), "endpoint GET http://127.0.0.1:3000/api/auth/session until it answers 2xx (polled)"; got != want {
		t.Errorf("line %q; want %q", got, want)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"creates":[],"waits":[{"kind":"Helm release","namespace":"openshell","name":"openshell-gateway","selects":"the Deployments and StatefulSets","ready":"every replica is ready"},{"kind":"endpoint","name":"GET http://127.0.0.1:3000/api/auth/session","ready":"it answers 2xx","note":"polled"}],"note":"nothing created"}`
	if string(b) != want {
		t.Errorf("JSON %s; want %s", b, want)
	}
}

// A cluster's API address is a line among its typed containers and files, in order, and -o json
// has it only among the lines.
func TestProseKeepsItsPlaceAmongTheItems(t *testing.T) {
	d := Describe(EngineObject{Kind: "Docker container", Name: "k3d-x-server-0"}, Prose("Kubernetes API at https://127.0.0.1:6443"), FileAt("/s/kubeconfig", 0o600, ""))
	if got, want := strings.Join(d.Creates, "|"), "Docker container k3d-x-server-0|Kubernetes API at https://127.0.0.1:6443|file /s/kubeconfig (0600)"; got != want {
		t.Errorf("lines %q; want %q", got, want)
	}
	if len(d.EngineObjects) != 1 || len(d.Files) != 1 || len(d.Objects) != 0 || len(d.Images) != 0 {
		t.Errorf("typed items %+v", d)
	}
}
