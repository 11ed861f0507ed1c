// Package diagnose writes the debug bundle of a development environment: one tar.gz archive of
// facts (occ's version, the recorded state, the cluster's Events, Pod statuses and container
// logs, the Helm releases' status, the engine and the Compose services), as `kind export logs`
// gathers a cluster's. Every entry passes through one redaction before it is written, and what
// cannot be collected is listed with its cause in the bundle's summary: a collection error
// never ends the bundle.
package diagnose

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/contract"
)

// SummaryName is the bundle's table of contents: what was collected, and what could not be
// and why.
const SummaryName = "summary.txt"

// Bundle is one debug archive being written. It is safe for concurrent use.
type Bundle struct {
	path   string
	prefix string
	file   *os.File
	gz     *gzip.Writer
	tw     *tar.Writer
	now    time.Time

	mu        sync.Mutex
	secrets   [][]byte
	collected []string
	missing   []string
	err       error
}

// ErrExists says the bundle's file exists already: a bundle never replaces a file.
var ErrExists = errors.New("the file exists")

// Create starts a bundle at path: a new file, private to the user (0600), never an existing one
// (ErrExists). Its entries sit in one directory named after the file.
func Create(path string, now time.Time) (*Bundle, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create the debug bundle %s: %w", path, ErrExists)
	}
	if err != nil {
		return nil, fmt.Errorf("create the debug bundle: %w", err)
	}
	gz := gzip.NewWriter(f)
	return &Bundle{
		path: path, prefix: DirName(path), file: f, gz: gz, tw: tar.NewWriter(gz), now: now.UTC(),
	}, nil
}

// DirName is the directory inside the archive at path: its file name without .tar.gz.
func DirName(file string) string {
	base := file[strings.LastIndexAny(file, `/\`)+1:]
	return strings.TrimSuffix(strings.TrimSuffix(base, ".tgz"), ".tar.gz")
}

// Path is the archive's file.
func (b *Bundle) Path() string { return b.path }

// Secret adds values that must never appear in the bundle: each is replaced by REDACTED in every
// entry written after. Besides the value itself its base64 form and, for a value of several
// lines (a PEM key), each long line are redacted. Values shorter than 8 bytes are ignored: they
// would redact ordinary words, and no credential occ knows is that short.
func (b *Bundle) Secret(values ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < minSecret {
			continue
		}
		b.secrets = append(b.secrets, []byte(v), []byte(base64.StdEncoding.EncodeToString([]byte(v))))
		if strings.Contains(v, "\n") {
			for _, line := range strings.Split(v, "\n") {
				if line = strings.TrimSpace(line); len(line) >= minSecretLine {
					b.secrets = append(b.secrets, []byte(line))
				}
			}
		}
	}
	// Longest first, so a value is never half-replaced by a shorter one inside it.
	slices.SortFunc(b.secrets, func(x, y []byte) int { return len(y) - len(x) })
}

const (
	minSecret     = 8
	minSecretLine = 16
)

// Redacted is what stands for a secret in the bundle.
const Redacted = contract.Redacted

// urlPattern finds URLs in free text (logs, Events, errors): each passes through the one URL
// redaction of occ, which hides userinfo, query strings and fragments.
var urlPattern = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+")

// redact is data with every known secret and every URL credential replaced.
func (b *Bundle) redact(data []byte) []byte {
	for _, s := range b.secrets {
		data = bytes.ReplaceAll(data, s, []byte(Redacted))
	}
	return urlPattern.ReplaceAllFunc(data, func(u []byte) []byte { return []byte(contract.RedactURL(string(u))) })
}

// Add writes the entry name (a slash-separated path inside the bundle), redacted.
func (b *Bundle) Add(name string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(name, data)
	b.collected = append(b.collected, name)
}

func (b *Bundle) add(name string, data []byte) {
	if b.err != nil {
		return
	}
	data = b.redact(data)
	hdr := &tar.Header{Name: path.Join(b.prefix, name), Mode: 0o600, Size: int64(len(data)), ModTime: b.now, Typeflag: tar.TypeReg}
	if err := b.tw.WriteHeader(hdr); err != nil {
		b.err = fmt.Errorf("write %s into the debug bundle: %w", name, err)
		return
	}
	if _, err := b.tw.Write(data); err != nil {
		b.err = fmt.Errorf("write %s into the debug bundle: %w", name, err)
	}
}

// AddYAML writes v as YAML; a value that does not encode is listed as missing.
func (b *Bundle) AddYAML(name string, v any) {
	data, err := yaml.Marshal(v)
	if err != nil {
		b.Missing(name, err)
		return
	}
	b.Add(name, data)
}

// Missing lists what could not be collected, and why, in the summary.
func (b *Bundle) Missing(what string, cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.missing = append(b.missing, what+": "+string(b.redact([]byte(cause.Error()))))
}

// Close writes the summary under the given heading (what the bundle is of, and why it was
// written) and finishes the archive. A bundle that could not be written whole is removed.
func (b *Bundle) Close(heading string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	fmt.Fprintf(&s, "%s\nWritten %s.\n\nCollected (%d):\n", heading, b.now.Format(time.RFC3339), len(b.collected))
	for _, c := range b.collected {
		fmt.Fprintf(&s, "  %s\n", c)
	}
	fmt.Fprintf(&s, "\nNot collected (%d):\n", len(b.missing))
	for _, m := range b.missing {
		fmt.Fprintf(&s, "  %s\n", m)
	}
	fmt.Fprintf(&s, "\nSecrets (Secret values, tokens, keys, passwords, URL userinfo and query strings) are replaced by %s.\n", Redacted)
	b.add(SummaryName, []byte(s.String()))
	err := b.err
	err = errors.Join(err, b.tw.Close(), b.gz.Close(), b.file.Sync(), b.file.Close())
	if err != nil {
		_ = os.Remove(b.path)
		return fmt.Errorf("write the debug bundle %s: %w", b.path, err)
	}
	return nil
}

// SecretFile adds the content of a file that holds a credential (a key file, a password file)
// to the values never shown: the whole content and, for a JSON document, each of its strings.
// A file that does not exist holds nothing to hide.
func (b *Bundle) SecretFile(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		return
	}
	b.Secret(string(data))
	var doc any
	if json.Unmarshal(data, &doc) == nil {
		b.Secret(jsonStrings(doc)...)
	}
}

// jsonStrings are the string values of a decoded JSON document.
func jsonStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
		return out
	}
	return nil
}
