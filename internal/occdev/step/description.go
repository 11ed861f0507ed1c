package step

// Description is what a step would do, for --dry-run: what it creates, and a note for what it
// checks or uses without creating anything.
//
// A step that creates Kubernetes objects describes them as Objects, built from the same
// manifests its Run applies; Creates then holds one line per object, derived from them, so the
// printed dry run and the objects a run records cannot say different things.
type Description struct {
	Creates []string `json:"creates"`
	Objects []Object `json:"objects,omitempty"`
	Note    string   `json:"note,omitempty"`
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
	s := o.Kind + " "
	if o.Namespace != "" {
		s += o.Namespace + "/"
	}
	s += o.Name
	if o.Note != "" {
		s += " (" + o.Note + ")"
	}
	return s
}

// Creates describes a step by what it creates.
func Creates(items ...string) Description { return Description{Creates: items} }

// Objects describes a step by the objects it creates, one Creates line each.
func Objects(objs ...Object) Description {
	d := Description{Creates: make([]string, 0, len(objs)), Objects: objs}
	for _, o := range objs {
		d.Creates = append(d.Creates, o.String())
	}
	return d
}

// Note describes a step that creates nothing, by what it checks or uses.
func Note(text string) Description { return Description{Creates: []string{}, Note: text} }
