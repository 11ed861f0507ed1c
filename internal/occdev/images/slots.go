package images

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// Pinned are the pinned images `occ dev up` pulls itself, each at its Slot: the images k3d
// creates the cluster with, then the images the Gateway runs and the routing controllers'
// images, which are imported into the node. What each is for comes from the pins' own table
// (pins.ImageUse).
func Pinned(s *pins.Set) []pins.PinnedImage {
	return append(append(s.ClusterImages(), s.GatewayImages()...), s.RoutingImages()...)
}

// Planned are the images a plan lists: all of Pinned for a cluster occ creates, and without
// the images k3d creates the cluster with for one it does not (which pulls the others itself).
func Planned(s *pins.Set, creates bool) []pins.PinnedImage {
	return slices.DeleteFunc(Pinned(s), func(img pins.PinnedImage) bool { return img.Cluster && !creates })
}

// ByRole are the images imgs (Planned's) by role as a plan lists them: by digest, or as given
// when they have none (a node image selected by tag); never nil.
func ByRole(imgs []pins.PinnedImage) map[string]string {
	out := map[string]string{}
	for _, img := range imgs {
		out[img.Role] = img.Image.DigestReference()
		if img.Image.Digest == "" {
			out[img.Role] = img.Image.String()
		}
	}
	return out
}

// Slot is one image of Pinned, by its place there.
type Slot int

// slotsOf are the slots of the images whose use keep accepts, in Pinned order.
func slotsOf(s *pins.Set, keep func(pins.ImageUse) bool) []Slot {
	var out []Slot
	for i, img := range Pinned(s) {
		if keep(img.ImageUse) {
			out = append(out, Slot(i))
		}
	}
	return out
}

// ClusterSlots are the slots of the images k3d creates the cluster with.
func ClusterSlots(s *pins.Set) []Slot {
	return slotsOf(s, func(u pins.ImageUse) bool { return u.Cluster })
}

// NodeSlots are the slots of the images imported into the node, each by its own lane: the
// Gateway's and the routing controllers'.
func NodeSlots(s *pins.Set) []Slot {
	return slotsOf(s, func(u pins.ImageUse) bool { return u.Gateway != nil || u.Routing })
}

// PullTurns are the NodeSlots in the order their pulls take turns (Slots.InTurn): those pinned
// PullFirst first, then the others in pin order.
func PullTurns(s *pins.Set) []Slot {
	pinned := Pinned(s)
	turns := NodeSlots(s)
	slices.SortStableFunc(turns, func(a, b Slot) int {
		switch {
		case pinned[a].PullFirst == pinned[b].PullFirst:
			return 0
		case pinned[a].PullFirst:
			return -1
		}
		return 1
	})
	return turns
}

// GatewaySlots are the slots of the images the Gateway chart uses.
func GatewaySlots(s *pins.Set) []Slot {
	return slotsOf(s, func(u pins.ImageUse) bool { return u.Gateway != nil })
}

// RoutingSlots are the slots of the routing controllers' images.
func RoutingSlots(s *pins.Set) []Slot {
	return slotsOf(s, func(u pins.ImageUse) bool { return u.Routing })
}

// StartedSlots are the GatewaySlots of the images in started: those the Gateway chart's own
// objects start (its render check finds them), not those it only names for Sandboxes.
func StartedSlots(s *pins.Set, started []pins.Image) []Slot {
	pinned := Pinned(s)
	return slices.DeleteFunc(GatewaySlots(s), func(slot Slot) bool {
		img := pinned[slot].Image
		return !slices.ContainsFunc(started, func(st pins.Image) bool { return st.Name() == img.Name() && st.Digest == img.Digest })
	})
}

// Slots are the images of one `up` as the lanes that run side by side take them into the node:
// each pinned image at its Slot, which its own lane alone writes, and the run's own images (the
// control plane's), which one lane imports in one pass and verifies. A lane beside them reads a
// slot only after its readiness (InTurn, InNode) says it may.
type Slots struct {
	slots []slot
	// own are the run's own images imported into the node, and ownVerified the same verified.
	own         []Imported
	ownVerified []Verified
}

// slot is one pinned image as its lane took it: into the engine (local), into the node under its
// staging name (imported), then named there for the chart or manifest that runs it (verified).
type slot struct {
	local    Local
	node     string
	imported []Imported
	verified []Verified
	// pulled is set once the pull has every layer's bytes, or once it ended, however it ended
	// (InTurn); inNode once verified is.
	pulled, inNode step.Readiness
}

// NewSlots makes the slots of the images of s, before the lanes that fill them start.
func NewSlots(s *pins.Set) *Slots { return &Slots{slots: make([]slot, len(Pinned(s)))} }

// InTurn runs pull, the pull of slot, once the pull of after has all its bytes (its engine may
// still be extracting them) or has ended (at once when after is slot), and passes slot's turn
// when pull ends, however it ends, if Pull did not pass it before. Pulls in turn download one at
// a time: they share one link, so one at a time each is complete, and its import into the node
// under way, while the next downloads, and only the last one's import follows the last byte;
// side by side they would all complete together at the end and the largest's import would follow
// it (PullTurns puts the largest first). A pull of an image the engine holds ends at once.
func (s *Slots) InTurn(ctx context.Context, slot, after Slot, pull func() error) error {
	defer s.slots[slot].pulled.Set()
	if after != slot {
		if err := s.slots[after].pulled.Wait(ctx); err != nil {
			return err
		}
	}
	return pull()
}

// Pull makes the image of slot present in the engine (Present with opts), and passes its turn
// (InTurn) as soon as the engine has its bytes, while it may still be extracting them.
func (s *Slots) Pull(ctx context.Context, slot Slot, opts PresentOptions) error {
	x := &s.slots[slot]
	show, downloaded := opts.Progress, DownloadsDone(x.pulled.Set)
	opts.Progress = func(ev Event) {
		if show != nil {
			show(ev)
		}
		downloaded(ev)
	}
	l, err := Present(ctx, opts)
	if err != nil {
		return err
	}
	x.local = l
	return nil
}

// Import loads the image of slot, made present by Pull, into the node of opts.Importer (Import
// of that one image).
func (s *Slots) Import(ctx context.Context, slot Slot, opts ImportOptions) error {
	x := &s.slots[slot]
	opts.Images = []Local{x.local}
	imported, err := Import(ctx, opts)
	if err != nil {
		return err
	}
	x.node, x.imported = opts.Importer.NodeContainer(), imported
	return nil
}

// Verify proves the image of slot, imported by Import, is in its node as its pull produced it
// and names it there (VerifyInNode with opts, in the slot's node), then sets InNode(slot).
func (s *Slots) Verify(ctx context.Context, slot Slot, opts VerifyOptions) error {
	x := &s.slots[slot]
	opts.Node, opts.Images = x.node, x.imported
	verified, err := VerifyInNode(ctx, opts)
	if err != nil {
		return err
	}
	x.verified = verified
	x.inNode.Set()
	return nil
}

// InNode is set once the image of slot is verified in the node (Verify).
func (s *Slots) InNode(slot Slot) *step.Readiness { return &s.slots[slot].inNode }

// WaitInNode returns once the image of each of slots is verified in the node, or with ctx's error
// when ctx ends first (a lane beside the caller failed).
func (s *Slots) WaitInNode(ctx context.Context, slots []Slot) error {
	for _, slot := range slots {
		if err := s.InNode(slot).Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// CheckRepoDigests refuses each image of slots, and each of more, that the engine does not hold
// under its pinned digest (CheckRepoDigest): a re-tagged or locally built one.
func (s *Slots) CheckRepoDigests(slots []Slot, more []Local) error {
	var errs []error
	for _, slot := range slots {
		errs = append(errs, CheckRepoDigest(s.slots[slot].local))
	}
	for _, l := range more {
		errs = append(errs, CheckRepoDigest(l))
	}
	return errors.Join(errs...)
}

// ImportOwn loads the run's own images, opts.Images, into the node in one pass (Import).
func (s *Slots) ImportOwn(ctx context.Context, opts ImportOptions) error {
	imported, err := Import(ctx, opts)
	if err != nil {
		return err
	}
	s.own = imported
	return nil
}

// VerifyOwn proves the run's own images, imported by ImportOwn, are in the node of opts as they
// were imported, and names them there for their Pods (VerifyInNode).
func (s *Slots) VerifyOwn(ctx context.Context, opts VerifyOptions) error {
	opts.Images = s.own
	verified, err := VerifyInNode(ctx, opts)
	if err != nil {
		return err
	}
	s.ownVerified = verified
	return nil
}

// Verified are every image verified in the node: the pinned ones in slot order, then the run's
// own.
func (s *Slots) Verified() []Verified {
	var out []Verified
	for i := range s.slots {
		out = append(out, s.slots[i].verified...)
	}
	return append(out, s.ownVerified...)
}

// InCluster is the verified in-cluster reference of the imported image l, among Verified.
func (s *Slots) InCluster(l Local) (string, error) {
	for _, v := range s.Verified() {
		if v.Pin.Name() == l.Pin.Name() && v.Pin.Digest == l.Pin.Digest {
			return v.Reference, nil
		}
	}
	return "", fmt.Errorf("image %s was not verified in the node (a bug in occ: the import step skipped it)", l.Pin)
}

// InNodeContainerd is where the cluster's images are, as a dry run says it.
const InNodeContainerd = "the node's containerd"

// PresentItem is the image Present makes present in the engine, where, as a dry run describes
// it; bundle says it comes from a bundle, not from its registry.
func PresentItem(img pins.Image, where string, bundle bool) step.Image {
	note := "pulled by digest unless the engine has it"
	if bundle {
		note = "loaded from the bundle unless the engine has it by digest (an engine on the containerd image store, or Podman, keeps it under that digest, as a pull does)"
	}
	return step.Image{Reference: img.DigestReference(), Where: where, Note: note + "; an image that was there is left alone by down"}
}

// PullItem is the pinned image img made present in the engine, where, as a dry run describes its
// pull: PresentItem, or for an image the setting selectedBy gives by tag (it has no digest yet)
// its tag resolved at its registry first.
func PullItem(img pins.Image, where string, bundle bool, selectedBy string) step.Image {
	if img.Digest == "" {
		return step.Image{Reference: img.String(), Where: where,
			Note: "a tag (" + selectedBy + "): resolved to a digest at its registry, then pulled by that digest, which the cluster runs; an image that was there is left alone by down"}
	}
	return PresentItem(img, where, bundle)
}

// ImportItem is the import of a pinned image by its lane as a dry run describes it.
func ImportItem(img pins.Image) step.Image {
	return step.Image{Reference: img.DigestReference(), Where: InNodeContainerd,
		Note: "imported as soon as its pull is done and the node's containerd answers (for k3d, while the cluster is still starting): the engine's image save piped into ctr image import in the node, under a temporary staging tag removed afterwards"}
}

// VerifiedItem is a verified image as a dry run describes it.
func VerifiedItem(img pins.Image) step.Image {
	return step.Image{Reference: img.DigestReference(), Where: InNodeContainerd,
		Note: "named there once the node holds the local image its pinned pull produced: its config digest on the classic image store, the pinned index or its platform manifest on the containerd store"}
}

// ownItems are the run's own images (a profile's, as it names them for the dry run) in the
// node's containerd, each with note added to how it travels.
func ownItems(own []step.Image, note string) step.Description {
	var items []step.Item
	for _, img := range own {
		img.Where = InNodeContainerd
		if img.Note != "" {
			img.Note += "; "
		}
		img.Note += note
		items = append(items, img)
	}
	return step.Describe(items...)
}

// DescribeOwnImport is the import of the run's own images (Slots.ImportOwn) as a dry run
// describes it.
func DescribeOwnImport(own []step.Image) step.Description {
	d := ownItems(own, "imported")
	d.Note = "imported in one pass: the engine's image save piped into ctr image import in the node, under temporary staging tags removed afterwards"
	return d
}

// DescribeOwnVerify is the verification of the run's own images (Slots.VerifyOwn) as a dry run
// describes it.
func DescribeOwnVerify(own []step.Image) step.Description {
	d := ownItems(own, "named in the node for its Pods")
	d.Note = "each named once the node holds the local image imported (by the identity the engine's image store keeps)"
	return d
}
