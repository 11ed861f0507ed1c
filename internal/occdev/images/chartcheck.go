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
	Pin        pins.Image
	ValuesKeys []string
}

// OffendingImage is a container image of a rendered chart that is not a pinned digest.
type OffendingImage struct {
	// Object is "<Kind> <namespace>/<name>", Source the template it came from (Helm's
	// "# Source:" line), Container the container path ("initContainers[0] pki").
	Object    string
	Source    string
	Container string
	Image     string
	// ExpectedKeys are the values keys that were expected to set this image.
	ExpectedKeys []string
}

// ChartImageError lists every offending image of a chart.
type ChartImageError struct {
	Chart     string
	Offending []OffendingImage
}

func (e *ChartImageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chart %s renders containers whose images are not the pinned digests, so occ will not install it:", e.Chart)
	for _, o := range e.Offending {
		fmt.Fprintf(&b, "\n  - %s", o.Object)
		if o.Source != "" {
			fmt.Fprintf(&b, " (%s)", o.Source)
		}
		fmt.Fprintf(&b, " %s: image %q; the values expected to set it: %s", o.Container, o.Image, strings.Join(o.ExpectedKeys, ", "))
	}
	b.WriteString("\nthe chart's values layout does not match what occ sets (a different chart version?): pin a chart that takes these values, or update occ's values for it")
	return b.String()
}

// CheckRenderedImages reads a rendered chart (Helm's multi-document manifest) and requires every
// container, init container and ephemeral container image to be one of the expected pinned
// digests. A chart whose values layout ignores occ's image values would otherwise run tag-based
// images silently. Workloads of the core API groups are read as typed objects; any other kind
// (a custom resource embedding a pod template) is searched for container lists, so no image
// escapes the check by living in an unfamiliar kind.
func CheckRenderedImages(chart string, manifest io.Reader, expected []ExpectedImage) error {
	containers, err := renderedContainers(manifest)
	if err != nil {
		return fmt.Errorf("check images of chart %s: %w", chart, err)
	}
	var off []OffendingImage
	for _, c := range containers {
		if matchesPin(c.image, expected) {
			continue
		}
		off = append(off, OffendingImage{Object: c.object, Source: c.source, Container: c.container, Image: c.image, ExpectedKeys: expectedKeys(c.image, expected)})
	}
	if len(off) > 0 {
		return &ChartImageError{Chart: chart, Offending: off}
	}
	return nil
}

// matchesPin accepts name@digest and name:tag@digest of a pin (the digest decides what runs).
func matchesPin(ref string, expected []ExpectedImage) bool {
	img, err := pins.ParseImage(ref)
	if err != nil || img.Digest == "" {
		return false
	}
	for _, e := range expected {
		if img.Name() == e.Pin.Name() && img.Digest == e.Pin.Digest {
			return true
		}
	}
	return false
}

// expectedKeys names the values keys of the pin with the same repository, or of every pin when
// the image resembles none of them.
func expectedKeys(ref string, expected []ExpectedImage) []string {
	if img, err := pins.ParseImage(ref); err == nil {
		for _, e := range expected {
			if img.Name() == e.Pin.Name() {
				return e.ValuesKeys
			}
		}
	}
	var all []string
	for _, e := range expected {
		all = append(all, e.ValuesKeys...)
	}
	return all
}

type renderedContainer struct {
	object, source, container, image string
}

func renderedContainers(manifest io.Reader) ([]renderedContainer, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(manifest))
	var out []renderedContainer
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
		found, err := containersOf(&u)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", object, source, err)
		}
		for _, c := range found {
			c.object, c.source = object, source
			out = append(out, c)
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

func containersOf(u *unstructured.Unstructured) ([]renderedContainer, error) {
	spec, known, err := podSpecOf(u)
	if err != nil {
		return nil, err
	}
	if !known {
		return searchContainers(u.Object, ""), nil
	}
	if spec == nil {
		return nil, nil // a ReplicationController without a template
	}
	var out []renderedContainer
	for i, c := range spec.InitContainers {
		out = append(out, renderedContainer{container: fmt.Sprintf("initContainers[%d] %s", i, c.Name), image: c.Image})
	}
	for i, c := range spec.Containers {
		out = append(out, renderedContainer{container: fmt.Sprintf("containers[%d] %s", i, c.Name), image: c.Image})
	}
	for i, c := range spec.EphemeralContainers {
		out = append(out, renderedContainer{container: fmt.Sprintf("ephemeralContainers[%d] %s", i, c.Name), image: c.Image})
	}
	return out, nil
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
		// Every other kind (Services, ConfigMaps, custom resources) is searched generically.
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

// searchContainers walks any object for lists named containers, initContainers or
// ephemeralContainers whose entries have an image, and reports each with its path.
func searchContainers(v any, path string) []renderedContainer {
	var out []renderedContainer
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child := t[k]
			p := path + "." + k
			if list, ok := child.([]any); ok && (k == "containers" || k == "initContainers" || k == "ephemeralContainers") {
				for i, item := range list {
					if m, ok := item.(map[string]any); ok {
						if img, ok := m["image"].(string); ok {
							name, _ := m["name"].(string)
							out = append(out, renderedContainer{container: fmt.Sprintf("%s[%d] %s", strings.TrimPrefix(p, "."), i, name), image: img})
						}
					}
				}
				continue
			}
			out = append(out, searchContainers(child, p)...)
		}
	case []any:
		for i, item := range t {
			out = append(out, searchContainers(item, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}
