package step

import (
	"fmt"
	"io/fs"
)

// Description is what a step would do, for --dry-run: what it creates, and a note for what it
// checks or uses without creating anything.
//
// A step that creates Kubernetes objects describes them as Objects, built from the same
// manifests its Run applies; Creates then holds one line per object, derived from them, so the
// printed dry run and the objects a run records cannot say different things. A Prose line keeps
// its place among them without a typed entry; images an object's line already names (a chart's
// values) may be typed in Images without a line of their own. What a step waits for is in
// Waits, never in Creates.
type Description struct {
	Creates []string `json:"creates"`
	Objects []Object `json:"objects,omitempty"`
	Images  []Image  `json:"images,omitempty"`
	Files   []File   `json:"files,omitempty"`
	// EngineObjects are what the step makes in the container engine besides images.
	EngineObjects []EngineObject `json:"engineObjects,omitempty"`
	// Waits are what the step waits for without creating it, each with what ready means.
	Waits []Wait `json:"waits,omitempty"`
	Note  string `json:"note,omitempty"`
}

// Wait is something a step waits for: a Kubernetes workload or object, an engine object or an
// endpoint (Kind, with Namespace for a namespaced object), or, with Selects, what the wait
// selects of it ("the Deployments and StatefulSets" of a Helm release); Ready is what the step
// waits to see of it.
type Wait struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Selects   string `json:"selects,omitempty"`
	Ready     string `json:"ready"`
	Note      string `json:"note,omitempty"`
}

// String is the wait's dry-run line after "waits for": "Deployment ns/name until every replica
// is ready", "the Deployments and StatefulSets of Helm release ns/name until …".
func (w Wait) String() string {
	s := qualified(w.Kind, w.Namespace, w.Name)
	if w.Selects != "" {
		s = w.Selects + " of " + s
	}
	return withNote(s+" until "+w.Ready, w.Note)
}

// Waiting is d that also waits for ws, after what it waits for already.
func (d Description) Waiting(ws ...Wait) Description {
	d.Waits = append(d.Waits, ws...)
	return d
}

// Item is one thing a step creates: an Object, an Image, a File or an EngineObject.
type Item interface {
	String() string
	add(d *Description)
}

func (o Object) add(d *Description)       { d.Objects = append(d.Objects, o) }
func (i Image) add(d *Description)        { d.Images = append(d.Images, i) }
func (f File) add(d *Description)         { d.Files = append(d.Files, f) }
func (e EngineObject) add(d *Description) { d.EngineObjects = append(d.EngineObjects, e) }
func (Prose) add(*Description)            {}

// Prose is a line of what a step makes that no typed item says (a setting of the thing it makes,
// a check it runs once it is made), kept in order among the typed items; -o json has it only in
// creates.
type Prose string

func (p Prose) String() string { return string(p) }

// EngineObject is something a step makes in the container engine that is neither an image nor
// a Kubernetes object: a Compose project, a network, a volume, a host port published to a
// service. Kind says which ("network"), Name is the name the engine knows it by (a published
// port's host address), and Note what the step says of it.
type EngineObject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Note string `json:"note,omitempty"`
}

// String is the engine object's dry-run line: "volume name", "network name (note)".
func (e EngineObject) String() string { return withNote(e.Kind+" "+e.Name, e.Note) }

// Image is an image a step puts somewhere by its digest reference (repo@sha256:…), and where
// (the node's containerd).
type Image struct {
	Reference string `json:"reference"`
	Where     string `json:"where"`
	Note      string `json:"note,omitempty"`
}

// InEngine is the Where of an image a step puts into the container engine's own store.
const InEngine = "the engine"

// String is the image's dry-run line: "image repo@sha256:… in the node's containerd (note)".
func (i Image) String() string { return withNote("image "+i.Reference+" in "+i.Where, i.Note) }

// File is a file or directory a step writes, with the permission bits it gets.
type File struct {
	// Kind is "file" or "directory".
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Mode is the permission bits in octal, "0600".
	Mode string `json:"mode"`
	Note string `json:"note,omitempty"`
}

// String is the file's dry-run line: "file /path (0600; note)".
func (f File) String() string {
	n := f.Mode
	if f.Note != "" {
		n += "; " + f.Note
	}
	return withNote(f.Kind+" "+f.Path, n)
}

// FileAt is a file a step writes at path with mode's permission bits.
func FileAt(path string, mode fs.FileMode, note string) File {
	return File{Kind: "file", Path: path, Mode: fmt.Sprintf("%04o", mode.Perm()), Note: note}
}

// DirAt is a directory a step creates at path with mode's permission bits.
func DirAt(path string, mode fs.FileMode, note string) File {
	return File{Kind: "directory", Path: path, Mode: fmt.Sprintf("%04o", mode.Perm()), Note: note}
}

func withNote(s, note string) string {
	if note == "" {
		return s
	}
	return s + " (" + note + ")"
}

// Object is a Kubernetes object (or a Helm release) a step creates: its kind, namespace (empty
// for a cluster-scoped object) and name as its record in the state names it, and a note on what
// it holds or what the step waits for.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Note      string `json:"note,omitempty"`
}

// String is the object's dry-run line: "Secret oce-system/occ-auth (key secret)", or
// "ClusterRoleBinding name" for a cluster-scoped object.
func (o Object) String() string {
	return withNote(qualified(o.Kind, o.Namespace, o.Name), o.Note)
}

// qualified is "Kind namespace/name", or "Kind name" for a cluster-scoped object.
func qualified(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// Creates describes a step by what it creates.
func Creates(items ...string) Description { return Description{Creates: items} }

// Objects describes a step by the objects it creates, one Creates line each.
func Objects(objs ...Object) Description {
	items := make([]Item, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	return Describe(items...)
}

// Describe describes a step by the objects, images and files it creates, in order, one
// Creates line each.
func Describe(items ...Item) Description {
	d := Description{Creates: make([]string, 0, len(items))}
	for _, it := range items {
		d.Creates = append(d.Creates, it.String())
		it.add(&d)
	}
	return d
}

// Note describes a step that creates nothing, by what it checks or uses.
func Note(text string) Description { return Description{Creates: []string{}, Note: text} }
