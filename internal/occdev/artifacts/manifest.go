package artifacts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/fsutil"
)

// maxManifestSize bounds what is read from a manifest (the Agent Sandbox one is ~100 KB).
const maxManifestSize = 32 << 20

// ParseManifest parses the verified multi-document YAML src (the Agent Sandbox manifest) into
// objects, in file order. Empty documents are skipped; List kinds are flattened. Every object
// must have apiVersion, kind and metadata.name, because it is applied by name.
func ParseManifest(src *Verified) ([]*unstructured.Unstructured, error) {
	data, err := ReadManifest(src)
	if err != nil {
		return nil, err
	}
	return ParseYAML(data, src.Path())
}

// CachedManifest is the manifest with sha256 sum parsed from the cache when a verified copy is
// there, nil otherwise: a dry run reads what `up` would not download again, and downloads nothing.
func (f *Fetcher) CachedManifest(sum string) []*unstructured.Unstructured {
	path, err := f.CachePath(sum)
	if err != nil {
		return nil
	}
	v, err := OpenVerified(path, sum)
	if err != nil {
		return nil
	}
	defer v.Close()
	objs, err := ParseManifest(v)
	if err != nil {
		return nil
	}
	return objs
}

// LocalManifest reads, offline, the manifest `up` would apply: the selected file path (with an
// error naming path when it cannot be read, parsed, or holds no objects), or when path is empty
// the pinned one with sha256 sum when a verified copy is in the cache under cacheDir, else nil.
func LocalManifest(path, cacheDir, sum string) ([]*unstructured.Unstructured, error) {
	if path == "" {
		return (&Fetcher{CacheDir: cacheDir}).CachedManifest(sum), nil
	}
	data, err := fsutil.ReadRegular(path)
	var manifest []*unstructured.Unstructured
	if err == nil {
		manifest, err = ParseYAML(data, path)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %v", path, err)
	case len(manifest) == 0:
		return nil, fmt.Errorf("%s holds no objects", path)
	}
	return manifest, nil
}

// ReadManifest returns the verified manifest src, bounded in size like every manifest occ reads.
func ReadManifest(src *Verified) ([]byte, error) {
	r, err := src.open()
	if err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", src.Path(), err)
	}
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("manifest %s is larger than %d bytes; refusing to parse it", src.Path(), maxManifestSize)
	}
	return data, nil
}

// ParseYAML splits multi-document YAML into objects. source names the data in errors.
func ParseYAML(data []byte, source string) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d is not valid YAML: %w", source, doc, err)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("%s: document %d is not a Kubernetes object: %w", source, doc, err)
		}
		items := []*unstructured.Unstructured{obj}
		if obj.IsList() {
			items = items[:0]
			if err := obj.EachListItem(func(o runtime.Object) error {
				u, ok := o.(*unstructured.Unstructured)
				if !ok {
					return fmt.Errorf("list item of type %T", o)
				}
				items = append(items, u)
				return nil
			}); err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
			}
		}
		for _, it := range items {
			if it.GetAPIVersion() == "" || it.GetKind() == "" || it.GetName() == "" {
				return nil, fmt.Errorf("%s: document %d: object %s %q lacks apiVersion, kind or metadata.name", source, doc, it.GetKind(), it.GetName())
			}
			out = append(out, it)
		}
	}
}
