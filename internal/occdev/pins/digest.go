package pins

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/openclaw/occ/internal/contract"
)

// Canonical is the set's canonical encoding: the JSON of the parsed set, its keys in the fixed
// order of the Set type, without the set's Source. It is computed from the parsed values, never
// from the file's bytes, so comments, key order, quoting and whitespace in the file change
// nothing, while any pinned value does. Two lists whose order carries no meaning are sorted: the
// routing controllers' images (each is looked up by the reference its manifest names) and the
// notes (by pin; the notes about one pin keep their order, the order show prints them in).
// Every URL is written as contract.RedactURL shows it: a pin file may carry credentials in a
// URL's userinfo or query (a presigned mirror), and neither the digest, which names the set in
// CI caches and logs, nor a bundle's copy of the set may depend on or hold them; the artifacts
// are identified by their sha256 all the same. The encoding is itself a pin file: Parse reads
// it back.
func (s *Set) Canonical() ([]byte, error) {
	c := *s
	c.OpenShell.SourceArchive.URL = contract.RedactURL(c.OpenShell.SourceArchive.URL)
	c.AgentSandbox.Manifest.URL = contract.RedactURL(c.AgentSandbox.Manifest.URL)
	if s.Routing != nil {
		r := *s.Routing
		for _, ctl := range []*RoutingController{&r.CertManager, &r.EnvoyGateway} {
			ctl.Manifest.URL = contract.RedactURL(ctl.Manifest.URL)
			ctl.Images = slices.Clone(ctl.Images)
			slices.SortFunc(ctl.Images, func(a, b Image) int { return cmp.Compare(a.String(), b.String()) })
		}
		c.Routing = &r
	}
	c.Notes = slices.Clone(s.Notes)
	slices.SortStableFunc(c.Notes, func(a, b Note) int { return cmp.Compare(a.Pin, b.Pin) })
	data, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode the pin set from %s: %w", s.Source, err)
	}
	return data, nil
}

// SourceName is where the set came from as documents print it: "built in", or the pin file's
// absolute path.
func (s *Set) SourceName() string {
	if s.Source == EmbeddedSource {
		return "built in"
	}
	if abs, err := filepath.Abs(s.Source); err == nil {
		return abs
	}
	return s.Source
}

// Digest is the hex SHA-256 of the set's canonical encoding: one stable name for the set, for
// cache keys (occ dev pins digest) and to tell whether a bundle holds the pins built into occ.
func (s *Set) Digest() (string, error) {
	data, err := s.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
