package images

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// ExpectedImage is a pinned image a rendered chart may use, with the chart values keys occ sets
// to make the chart use it (named in the refusal when the chart ignores them).
type ExpectedImage struct {
	Pin pins.Image
	// Role names the image in messages ("Gateway", "sandbox runtime", "supervisor").
	Role       string
	ValuesKeys []string
	// Required means the chart must name the pin somewhere, in a container or in its rendered
	// configuration. A chart that names it nowhere leaves the choice to the program's built-in
	// default, which is a tag occ never pulled or verified.
	Required bool
}

// UnusedConfigKey is a configuration key whose image occ does not require to be pinned,
// because nothing occ runs ever uses it; Reason says why, for the plan and the progress line.
type UnusedConfigKey struct {
	// Key is the last segment of the configuration key ("default_image").
	Key    string
	Reason string
}

// Rules say what a rendered chart may run.
type Rules struct {
	Expected []ExpectedImage
	Unused   []UnusedConfigKey
}

// FoundImage is an image reference a rendered chart carries: in a container, in a container's
// environment or flags, or in rendered configuration (a ConfigMap).
type FoundImage struct {
	// Object is "<Kind> <namespace>/<name>", Source the template it came from (Helm's
	// "# Source:" line), Where the place inside the object ("initContainers[0] pki",
	// "containers[0] gateway env OPENSHELL_SANDBOX_IMAGE", "gateway.toml line 12, key
	// openshell.gateway.supervisor_image").
	Object string
	Source string
	Where  string
	Image  string
	// Starts says that the chart's own objects make the cluster start the image once they are
	// applied: the image of a container of a workload, or any image an object of a kind occ does
	// not know names (a custom resource may make its controller start it). An image named in a
	// container's environment or flags, or in configuration, is one the program is told to start
	// later (the Gateway, for the Sandboxes it is asked to create).
	Starts bool
	// configKey is the configuration key that holds the image (empty outside configuration).
	configKey string
}

func (f FoundImage) String() string {
	s := f.Object
	if f.Source != "" {
		s += " (" + f.Source + ")"
	}
	return s + " " + f.Where + ": image " + fmt.Sprintf("%q", f.Image)
}

// OffendingImage is an image of a rendered chart that is not a pinned digest.
type OffendingImage struct {
	FoundImage
	// ExpectedKeys are the values keys that were expected to set this image: those of the pin of
	// the same repository; none when the image resembles no pin (no value occ sets reaches it).
	ExpectedKeys []string
}

// UnusedImage is an image found under an UnusedConfigKey, with the reason it may stay unpinned.
type UnusedImage struct {
	FoundImage
	Reason string
}

// ChartImages is what a passing check found.
type ChartImages struct {
	// Pinned are the places that name a pinned digest.
	Pinned []FoundImage
	// Unused are the images under configuration keys occ never uses.
	Unused []UnusedImage
	// Started are the pins the chart's own objects start (FoundImage.Starts), in rules order:
	// the images that must be in the cluster before the chart is installed. The other pins are
	// named for the program to start later.
	Started []pins.Image
}

// ChartImageError lists every offending image of a chart and every required pin it names
// nowhere.
type ChartImageError struct {
	Chart     string
	Offending []OffendingImage
	Missing   []ExpectedImage
}

func (e *ChartImageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chart %s would make the cluster run images that are not the pinned digests, so occ will not install it:", e.Chart)
	for _, o := range e.Offending {
		if len(o.ExpectedKeys) == 0 {
			fmt.Fprintf(&b, "\n  - %s; it is none of the pinned images, and no value occ sets reaches it (the chart names it itself)", o.FoundImage)
			continue
		}
		fmt.Fprintf(&b, "\n  - %s; the values expected to set it: %s", o.FoundImage, strings.Join(o.ExpectedKeys, ", "))
	}
	for _, m := range e.Missing {
		fmt.Fprintf(&b, "\n  - the pinned %s image %s is named nowhere in the rendered chart (no container, no configuration): the chart ignores %s, and the Gateway would start its built-in default instead",
			m.Role, m.Pin.DigestReference(), strings.Join(m.ValuesKeys, ", "))
	}
	b.WriteString("\nthe chart's values layout does not match what occ sets (a different chart version?): pin a chart that takes these values, or update occ's values for it")
	return b.String()
}

// CheckRenderedImages reads a rendered chart (Helm's multi-document manifest) and requires every
// image it can make the cluster run to be one of the expected pinned digests: container, init
// container and ephemeral container images, images named by their environment variables and
// flags, and every image reference in rendered configuration (ConfigMap entries: TOML lines
// such as supervisor_image = "…", YAML and JSON values under keys naming an image). Every
// required pin must appear at least once. Workloads of the core API groups are read as typed
// objects; any other kind (a custom resource embedding a pod template) is searched for container
// lists and image fields, so no image escapes the check by living in an unfamiliar kind.
func CheckRenderedImages(chart string, manifest io.Reader, rules Rules) (*ChartImages, error) {
	found, err := renderedImages(manifest)
	if err != nil {
		return nil, fmt.Errorf("check images of chart %s: %w", chart, err)
	}
	report := &ChartImages{}
	var off []OffendingImage
	seen := make([]bool, len(rules.Expected))
	started := make([]bool, len(rules.Expected))
	for _, f := range found {
		if i := matchingPin(f.Image, rules.Expected); i >= 0 {
			seen[i] = true
			started[i] = started[i] || f.Starts
			report.Pinned = append(report.Pinned, f)
			continue
		}
		if reason, ok := unusedReason(f, rules.Unused); ok {
			report.Unused = append(report.Unused, UnusedImage{FoundImage: f, Reason: reason})
			continue
		}
		off = append(off, OffendingImage{FoundImage: f, ExpectedKeys: expectedKeys(f.Image, rules.Expected)})
	}
	var missing []ExpectedImage
	for i, e := range rules.Expected {
		if e.Required && !seen[i] {
			missing = append(missing, e)
		}
	}
	if len(off) > 0 || len(missing) > 0 {
		return nil, &ChartImageError{Chart: chart, Offending: off, Missing: missing}
	}
	for i, e := range rules.Expected {
		if started[i] {
			report.Started = append(report.Started, e.Pin)
		}
	}
	return report, nil
}

func unusedReason(f FoundImage, unused []UnusedConfigKey) (string, bool) {
	if f.configKey == "" {
		return "", false
	}
	last := f.configKey[strings.LastIndex(f.configKey, ".")+1:]
	for _, u := range unused {
		if u.Key == last {
			return u.Reason, true
		}
	}
	return "", false
}

// matchingPin returns the index of the pin ref names (name@digest or name:tag@digest: the
// digest decides what runs), or -1.
func matchingPin(ref string, expected []ExpectedImage) int {
	img, err := pins.ParseImage(ref)
	if err != nil || img.Digest == "" {
		return -1
	}
	for i, e := range expected {
		if img.Name() == e.Pin.Name() && img.Digest == e.Pin.Digest {
			return i
		}
	}
	return -1
}

// expectedKeys names the values keys of the pin with the same repository; none when the image
// resembles no pin (listing every key would blame values that have nothing to do with it).
func expectedKeys(ref string, expected []ExpectedImage) []string {
	if img, err := pins.ParseImage(ref); err == nil {
		for _, e := range expected {
			if img.Name() == e.Pin.Name() {
				return e.ValuesKeys
			}
		}
	}
	return nil
}

func renderedImages(manifest io.Reader) ([]FoundImage, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(manifest))
	var out []FoundImage
	for i := 0; ; i++ {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read document %d: %w", i+1, err)
		}
		source := sourceOf(doc)
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i+1, source, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		object := u.GetKind() + " " + u.GetName()
		if ns := u.GetNamespace(); ns != "" {
			object = u.GetKind() + " " + ns + "/" + u.GetName()
		}
		found, err := imagesOf(&u)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", object, source, err)
		}
		for _, f := range found {
			f.Object, f.Source = object, source
			out = append(out, f)
		}
	}
}

// sourceOf returns the template named by Helm's "# Source: chart/templates/x.yaml" line.
func sourceOf(doc []byte) string {
	for _, line := range strings.Split(string(doc), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "# Source: "); ok {
			return s
		}
	}
	return ""
}

func imagesOf(u *unstructured.Unstructured) ([]FoundImage, error) {
	gvk := u.GroupVersionKind()
	switch gvk.Group + "/" + gvk.Kind {
	case "/ConfigMap":
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
			return nil, fmt.Errorf("decode as ConfigMap: %w", err)
		}
		found, err := scanConfigData(cm.Data)
		if err != nil {
			return nil, err
		}
		out := make([]FoundImage, 0, len(found))
		for _, c := range found {
			out = append(out, FoundImage{Where: c.where, Image: c.image, configKey: c.key})
		}
		return out, nil
	case "apiextensions.k8s.io/CustomResourceDefinition":
		// A schema, not something that runs; its "image" properties are type declarations.
		return nil, nil
	}
	spec, known, err := podSpecOf(u)
	if err != nil {
		return nil, err
	}
	if !known {
		// What an object of an unfamiliar kind names, its controller may start as soon as it
		// is applied.
		found := searchImages(u.Object)
		for i := range found {
			found[i].Starts = true
		}
		return found, nil
	}
	if spec == nil {
		return nil, nil // a ReplicationController without a template
	}
	var out []FoundImage
	for i, c := range spec.InitContainers {
		out = append(out, containerImages(fmt.Sprintf("initContainers[%d] %s", i, c.Name), c.Image, c.Env, commandLine(c.Command, c.Args))...)
	}
	for i, c := range spec.Containers {
		out = append(out, containerImages(fmt.Sprintf("containers[%d] %s", i, c.Name), c.Image, c.Env, commandLine(c.Command, c.Args))...)
	}
	for i, c := range spec.EphemeralContainers {
		out = append(out, containerImages(fmt.Sprintf("ephemeralContainers[%d] %s", i, c.Name), c.Image, c.Env, commandLine(c.Command, c.Args))...)
	}
	return out, nil
}

func commandLine(command, args []string) []string {
	return append(append([]string{}, command...), args...)
}

// containerImages are a container's image and the images its environment variables and flags
// name (a Gateway told its supervisor image by OPENSHELL_SUPERVISOR_IMAGE or
// --supervisor-image starts that image).
func containerImages(where string, image string, env []corev1.EnvVar, argv []string) []FoundImage {
	out := []FoundImage{{Where: where, Image: image, Starts: true}}
	for _, e := range env {
		if NamesImage(e.Name) && strings.TrimSpace(e.Value) != "" {
			out = append(out, FoundImage{Where: where + " env " + e.Name, Image: strings.TrimSpace(e.Value)})
		}
	}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !NamesImage(name) {
			continue
		}
		if !hasValue && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			i++
			value, hasValue = argv[i], true
		}
		if hasValue && strings.TrimSpace(value) != "" {
			out = append(out, FoundImage{Where: where + " flag --" + name, Image: strings.TrimSpace(value)})
		}
	}
	return out
}

// podSpecOf converts the core workload kinds to their typed form; known is false for every other
// kind.
func podSpecOf(u *unstructured.Unstructured) (spec *corev1.PodSpec, known bool, err error) {
	gvk := u.GroupVersionKind()
	var obj any
	switch gvk.Group + "/" + gvk.Kind {
	case "/Pod":
		obj = &corev1.Pod{}
	case "/PodTemplate":
		obj = &corev1.PodTemplate{}
	case "/ReplicationController":
		obj = &corev1.ReplicationController{}
	case "apps/Deployment":
		obj = &appsv1.Deployment{}
	case "apps/StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "apps/DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "apps/ReplicaSet":
		obj = &appsv1.ReplicaSet{}
	case "batch/Job":
		obj = &batchv1.Job{}
	case "batch/CronJob":
		obj = &batchv1.CronJob{}
	default:
		// Every other kind (Services, custom resources) is searched generically.
		return nil, false, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, true, fmt.Errorf("decode as %s: %w", gvk.Kind, err)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return &o.Spec, true, nil
	case *corev1.PodTemplate:
		return &o.Template.Spec, true, nil
	case *corev1.ReplicationController:
		if o.Spec.Template == nil {
			return nil, true, nil
		}
		return &o.Spec.Template.Spec, true, nil
	case *appsv1.Deployment:
		return &o.Spec.Template.Spec, true, nil
	case *appsv1.StatefulSet:
		return &o.Spec.Template.Spec, true, nil
	case *appsv1.DaemonSet:
		return &o.Spec.Template.Spec, true, nil
	case *appsv1.ReplicaSet:
		return &o.Spec.Template.Spec, true, nil
	case *batchv1.Job:
		return &o.Spec.Template.Spec, true, nil
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.Spec, true, nil
	}
	return nil, true, nil
}

// searchImages walks an object of an unfamiliar kind: lists named containers, initContainers or
// ephemeralContainers are read as containers (image, environment, flags), and any other string
// field under a key naming an image is reported with its path. Metadata is skipped: an
// annotation key ending in "image" names no image the cluster runs.
func searchImages(obj map[string]any) []FoundImage {
	var out []FoundImage
	var walk func(v any, p string)
	walk = func(v any, p string) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				child := t[k]
				cp := strings.TrimPrefix(p+"."+k, ".")
				if p == "" && k == "metadata" {
					continue
				}
				if list, ok := child.([]any); ok && (k == "containers" || k == "initContainers" || k == "ephemeralContainers") {
					for i, item := range list {
						m, ok := item.(map[string]any)
						if !ok {
							continue
						}
						var c corev1.Container
						if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
							// Not a container after all: search it like any other value.
							walk(item, fmt.Sprintf("%s[%d]", cp, i))
							continue
						}
						if c.Image == "" {
							continue
						}
						out = append(out, containerImages(fmt.Sprintf("%s[%d] %s", cp, i, c.Name), c.Image, c.Env, commandLine(c.Command, c.Args))...)
					}
					continue
				}
				if NamesImage(k) {
					imgs := imageStrings(child)
					if img := imageFromParts(child); img != "" {
						imgs = append(imgs, img)
					}
					for _, img := range imgs {
						out = append(out, FoundImage{Where: cp, Image: img})
					}
					if len(imgs) > 0 {
						continue
					}
				}
				walk(child, cp)
			}
		case []any:
			for i, item := range t {
				walk(item, fmt.Sprintf("%s[%d]", p, i))
			}
		}
	}
	walk(obj, "")
	return out
}

// FindImages lists every image reference a multi-document manifest carries, as written, with the
// same reach as CheckRenderedImages (containers, their environment and flags, configuration in
// ConfigMaps, and image fields of unfamiliar kinds).
func FindImages(manifest io.Reader) ([]FoundImage, error) {
	return renderedImages(manifest)
}
