package images

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
	"sigs.k8s.io/yaml"
)

// configImage is an image reference found in rendered configuration: Where says where inside
// the object (the data entry, the line, the key), Key is the configuration key that holds it
// (the dotted TOML or YAML path, or the data key itself).
type configImage struct {
	where, key, image string
}

// NamesImage reports whether a configuration key, environment variable or flag names an image:
// its last word is "image" or "images" ("supervisor_image", "sandboxRuntimeImage",
// "OPENSHELL_SANDBOX_IMAGE", "--default-image"), optionally followed by "ref", "reference" or
// "uri". Keys about images that are not images ("image_pull_policy", "imagePullSecrets") do
// not.
func NamesImage(key string) bool {
	words := keyWords(key)
	if n := len(words); n > 1 && (words[n-1] == "ref" || words[n-1] == "reference" || words[n-1] == "uri") {
		words = words[:n-1]
	}
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	return last == "image" || last == "images"
}

// keyWords splits a key into lower-case words at separators and lower-to-upper case changes.
func keyWords(key string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(key)
	for i, r := range runes {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(runes[i-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}

// configFormat is how a data entry of a ConfigMap is read.
type configFormat int

const (
	formatTOML configFormat = iota
	formatYAML
	// formatGuess is a data key without a known extension: read as TOML or JSON when it parses
	// as one, never as YAML (almost any text is YAML, and a note is not configuration).
	formatGuess
)

func formatOf(dataKey string) configFormat {
	switch strings.ToLower(path.Ext(dataKey)) {
	case ".toml":
		return formatTOML
	case ".yaml", ".yml", ".json":
		return formatYAML
	}
	return formatGuess
}

// scanConfigData finds the image references in the data of a ConfigMap: an entry whose own key
// names an image is one, and every entry that is a TOML, YAML or JSON document is searched for
// keys naming an image. A document in a format it claims (by its key's extension) but that does
// not parse is an error: the program reading it would fail too, and occ cannot vouch for what
// it would run.
func scanConfigData(data map[string]string) ([]configImage, error) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []configImage
	for _, k := range keys {
		body := data[k]
		if NamesImage(k) {
			if v := strings.TrimSpace(body); v != "" {
				out = append(out, configImage{where: "data key " + k, key: k, image: v})
			}
			continue
		}
		found, err := scanConfigDocument(k, body)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

func scanConfigDocument(dataKey, body string) ([]configImage, error) {
	switch formatOf(dataKey) {
	case formatTOML:
		found, err := scanTOML(dataKey, body)
		if err != nil {
			return nil, fmt.Errorf("data key %s is not valid TOML: %w", dataKey, err)
		}
		return found, nil
	case formatYAML:
		var doc any
		if err := yaml.Unmarshal([]byte(body), &doc); err != nil {
			return nil, fmt.Errorf("data key %s is not valid YAML or JSON: %w", dataKey, err)
		}
		return scanTree(dataKey, doc), nil
	}
	if found, err := scanTOML(dataKey, body); err == nil {
		return found, nil
	}
	if t := strings.TrimSpace(body); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		var doc any
		if json.Unmarshal([]byte(t), &doc) == nil {
			return scanTree(dataKey, doc), nil
		}
	}
	return nil, nil
}

// scanTOML decodes a TOML document and reports every string (or array of strings) under a key
// naming an image, with its dotted key and, where the key is written on a line of its own, the
// line number.
func scanTOML(dataKey, body string) ([]configImage, error) {
	var doc map[string]any
	md, err := toml.Decode(body, &doc)
	if err != nil {
		return nil, err
	}
	lines := tomlKeyLines(body)
	var out []configImage
	for _, key := range md.Keys() {
		if len(key) == 0 || !NamesImage(key[len(key)-1]) {
			continue
		}
		v := lookupTOML(doc, key)
		dotted := key.String()
		where := dataKey
		if n, ok := lines[dotted]; ok {
			where = fmt.Sprintf("%s line %d", dataKey, n)
		}
		where += ", key " + dotted
		for _, img := range imageStrings(v) {
			out = append(out, configImage{where: where, key: dotted, image: img})
		}
	}
	return out, nil
}

func lookupTOML(doc map[string]any, key toml.Key) any {
	var cur any = doc
	for _, k := range key {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// tomlKeyLines maps the dotted keys of a TOML document's "key = value" lines to their line
// numbers, following [table] headers. It only locates keys for messages; the values come from
// the real decoder.
func tomlKeyLines(body string) map[string]int {
	lines := map[string]int{}
	table := ""
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[[") && strings.HasSuffix(line, "]]"):
			table = strings.TrimSpace(line[2 : len(line)-2])
		case strings.HasPrefix(line, "["):
			if end := strings.Index(line, "]"); end > 0 {
				table = strings.TrimSpace(line[1:end])
			}
		default:
			eq := strings.Index(line, "=")
			if eq <= 0 {
				continue
			}
			key := strings.Trim(strings.TrimSpace(line[:eq]), `"'`)
			if table != "" {
				key = table + "." + key
			}
			if _, seen := lines[key]; !seen {
				lines[key] = n
			}
		}
	}
	return lines
}

// scanTree walks a decoded YAML or JSON document for keys naming an image.
func scanTree(dataKey string, doc any) []configImage {
	var out []configImage
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
				child := joinPath(p, k)
				if NamesImage(k) {
					if imgs := imageStrings(t[k]); len(imgs) > 0 {
						for _, img := range imgs {
							out = append(out, configImage{where: dataKey + ", key " + child, key: child, image: img})
						}
						continue
					}
					if img := imageFromParts(t[k]); img != "" {
						out = append(out, configImage{where: dataKey + ", key " + child, key: child, image: img})
						continue
					}
				}
				walk(t[k], child)
			}
		case []any:
			for i, item := range t {
				walk(item, fmt.Sprintf("%s[%d]", p, i))
			}
		}
	}
	walk(doc, "")
	return out
}

func joinPath(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

// imageStrings returns the non-empty strings of v (a string or a list of strings). An empty
// value names no image: what it leaves to the program's default is caught by the check that
// every required pin appears somewhere.
func imageStrings(v any) []string {
	switch t := v.(type) {
	case string:
		if s := strings.TrimSpace(t); s != "" {
			return []string{s}
		}
	case []any:
		var out []string
		for _, item := range t {
			if s, ok := item.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
		return out
	}
	return nil
}

// imageFromParts joins an image written as a map of parts ({registry, repository, tag, digest}),
// as values files and some configuration formats write it.
func imageFromParts(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	str := func(k string) string { s, _ := m[k].(string); return strings.TrimSpace(s) }
	repo := str("repository")
	if repo == "" {
		return ""
	}
	if reg := str("registry"); reg != "" {
		repo = reg + "/" + repo
	}
	if d := str("digest"); d != "" {
		return repo + "@" + d
	}
	if tag := str("tag"); tag != "" {
		return repo + ":" + tag
	}
	return repo
}
