package images

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// The slots follow the pins' own table: the images k3d creates the cluster with first, then the
// Gateway's, each at one slot; an existing cluster's plan lists only the images it pulls itself;
// the Gateway install waits for the images its chart starts, found among the Gateway's by name
// and digest.
func TestSlotsFollowThePins(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	pinned := Pinned(set)
	role := func(slots []Slot) []string {
		var out []string
		for _, s := range slots {
			out = append(out, pinned[s].Role)
		}
		return out
	}
	if got := role(ClusterSlots(set)); !slices.Equal(got, []string{"k3sNode", "k3dTools"}) {
		t.Errorf("cluster slots %q", got)
	}
	if got := role(NodeSlots(set)); !slices.Equal(got, []string{"gateway", "sandbox", "supervisor"}) || !slices.Equal(GatewaySlots(set), NodeSlots(set)) || RoutingSlots(set) != nil {
		t.Errorf("node slots %q (pins without routing images)", got)
	}
	// The Sandbox image, the largest, downloads first; the others follow in pin order.
	if got := role(PullTurns(set)); !slices.Equal(got, []string{"sandbox", "gateway", "supervisor"}) {
		t.Errorf("pull turns %q", got)
	}
	if got := len(Planned(set, true)); got != len(pinned) {
		t.Errorf("a created cluster's plan lists %d images of %d", got, len(pinned))
	}
	for _, img := range Planned(set, false) {
		if img.Cluster {
			t.Errorf("an existing cluster's plan lists %s", img.Role)
		}
	}
	tagged := *set
	tagged.K3s.Image = mustPin(t, "rancher/k3s:v1.33.1-k3s1")
	if got := ByRole(Planned(&tagged, true)); got["k3sNode"] != tagged.K3s.Image.String() || got["gateway"] != set.OpenShell.Images.Gateway.DigestReference() {
		t.Errorf("by role %v", got)
	}
	if got := ByRole(nil); got == nil {
		t.Error("no images by role is nil")
	}
	sandbox := set.OpenShell.Images.Sandbox
	if got := role(StartedSlots(set, []pins.Image{sandbox})); !slices.Equal(got, []string{"sandbox"}) {
		t.Errorf("started slots %q", got)
	}
	other := sandbox
	other.Digest = digestA
	if got := StartedSlots(set, []pins.Image{other}); len(got) != 0 {
		t.Errorf("an image of another digest started slots %v", got)
	}
}

// A profile's image is found among the verified ones by name and digest; one that no lane
// verified is a bug said as such.
func TestInClusterFindsTheVerifiedImage(t *testing.T) {
	s := &Slots{ownVerified: []Verified{{Pin: mustPin(t, "agent@"+digestA), Reference: "agent@" + digestA}}}
	if ref, err := s.InCluster(Local{Pin: mustPin(t, "agent@"+digestA)}); err != nil || ref != "agent@"+digestA {
		t.Errorf("verified: %q, %v", ref, err)
	}
	if _, err := s.InCluster(Local{Pin: mustPin(t, "agent@"+digestB)}); err == nil {
		t.Error("an image of another digest was found")
	}
}

// Each OpenShell image downloads after the one before it: a pull in turn starts only once the
// one before it has ended, failed or not, and a cancelled run ends a waiting pull without running
// it, passing its turn still.
func TestAPullInTurnWaitsForTheOneBefore(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	s := NewSlots(set)
	var (
		mu    sync.Mutex
		order []Slot
	)
	pull := func(slot Slot, err error) func() error {
		return func() error {
			mu.Lock()
			order = append(order, slot)
			mu.Unlock()
			return err
		}
	}
	first, second := Slot(1), Slot(0)
	done := make(chan error)
	go func() { done <- s.InTurn(context.Background(), second, first, pull(second, nil)) }()
	if s.slots[second].pulled.IsSet() {
		t.Fatal("the second pull ended before the first one began")
	}
	if err := s.InTurn(context.Background(), first, first, pull(first, errors.New("the first pull fails"))); err == nil {
		t.Fatal("the first pull's error was lost")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []Slot{first, second}) {
		t.Errorf("the pulls ran in order %v, want %v", order, []Slot{first, second})
	}

	s = NewSlots(set)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.InTurn(ctx, second, first, pull(second, nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("a waiting pull on a cancelled run ended with %v, want context.Canceled", err)
	}
	if !s.slots[second].pulled.IsSet() {
		t.Error("a cancelled pull did not pass its turn")
	}
	if err := s.WaitInNode(ctx, NodeSlots(set)); !errors.Is(err, context.Canceled) {
		t.Errorf("a wait for unverified images on a cancelled run ended with %v", err)
	}
	for _, slot := range NodeSlots(set) {
		s.InNode(slot).Set()
	}
	if err := s.WaitInNode(context.Background(), NodeSlots(set)); err != nil {
		t.Errorf("a wait for verified images: %v", err)
	}
}
