package pins

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// A CI job keys its bundle cache by `occ dev pins digest`: an engineer who reformats the pin
// file (comments, key order, indentation, quoting) must not invalidate the cache.
func TestDigestIgnoresTheFileLayout(t *testing.T) {
	set, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	want, err := set.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "" {
		t.Fatalf("digest %q is not 64 lower-case hex digits", want)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(embedded, &doc); err != nil {
		t.Fatal(err)
	}
	reshuffle(&doc)
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(4)
	if err := enc.Encode(&doc); err != nil {
		t.Fatal(err)
	}
	reshuffled := "# reformatted by hand\n\n" + b.String()
	if reshuffled == string(embedded) {
		t.Fatal("the reshuffled file is the embedded file; the test proves nothing")
	}
	encoded, err := Encode(set, "written by occ")
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := set.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"keys reversed, comments, indent 4": []byte(reshuffled), "pins.Encode": encoded, "the canonical encoding": canonical} {
		other, err := Parse(data, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, err := other.Digest(); err != nil || got != want {
			t.Errorf("%s: digest %s (%v), want %s", name, got, err, want)
		}
	}
}

// reshuffle reverses the keys of every mapping, double-quotes every scalar and comments every
// key: what a hand edit may do to a pin file without changing a pin.
func reshuffle(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		var pairs [][2]*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			pairs = append(pairs, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
		}
		n.Content = n.Content[:0]
		for i := len(pairs) - 1; i >= 0; i-- {
			pairs[i][0].HeadComment = "# " + pairs[i][0].Value
			n.Content = append(n.Content, pairs[i][0], pairs[i][1])
		}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		n.Style = yaml.DoubleQuotedStyle
	}
	n.LineComment = ""
	for _, c := range n.Content {
		reshuffle(c)
	}
}

// A CI cache must never serve the bundle of other pins: every pinned value, changed alone,
// changes the digest.
func TestDigestFollowsEveryPinnedValue(t *testing.T) {
	base, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	baseDigest, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}
	flip := func(s string) string { // the last hex digit, changed
		last := s[len(s)-1]
		if last == '0' {
			return s[:len(s)-1] + "1"
		}
		return s[:len(s)-1] + "0"
	}
	changes := map[string]func(*Set){
		"openshell.version":                       func(s *Set) { s.OpenShell.Version = "0.1.3-pre.9" },
		"openshell.commit":                        func(s *Set) { s.OpenShell.Commit = flip(s.OpenShell.Commit) },
		"openshell.sourceArchive.topDirectory":    func(s *Set) { s.OpenShell.SourceArchive.TopDirectory = "OpenShell-x" },
		"openshell.sourceArchive.helmDirectory":   func(s *Set) { s.OpenShell.SourceArchive.HelmDirectory = "helm" },
		"openshell.charts.gateway":                func(s *Set) { s.OpenShell.Charts.Gateway += "2" },
		"openshell.charts.workspace":              func(s *Set) { s.OpenShell.Charts.Workspace += "2" },
		"agentSandbox.version":                    func(s *Set) { s.AgentSandbox.Version = "v0.5.3" },
		"routing.certManager.version":             func(s *Set) { s.Routing.CertManager.Version = "v1.18.5" },
		"routing.envoyGateway.images (one added)": func(s *Set) { s.Routing.EnvoyGateway.Images = append(s.Routing.EnvoyGateway.Images, s.K3s.Image) },
		"notes[0].text":                           func(s *Set) { s.Notes[0].Text += " More." },
		"routing (removed)":                       func(s *Set) { s.Routing = nil },
	}
	for _, e := range base.Entries() {
		key := e.Key
		switch {
		case e.Image != nil:
			changes[key+" digest"] = func(s *Set) { img := entryOf(t, s, key).Image; img.Digest = flip(img.Digest) }
			changes[key+" tag"] = func(s *Set) { entryOf(t, s, key).Image.Tag += "x" }
			changes[key+" repository"] = func(s *Set) { entryOf(t, s, key).Image.Repository += "x" }
		case e.Artifact != nil:
			changes[key+" sha256"] = func(s *Set) { a := entryOf(t, s, key).Artifact; a.SHA256 = flip(a.SHA256) }
			changes[key+" url"] = func(s *Set) { entryOf(t, s, key).Artifact.URL += "x" }
		}
	}
	if len(changes) < 40 {
		t.Fatalf("only %d changes: the set's entries were not found", len(changes))
	}
	for name, change := range changes {
		s, err := Default()
		if err != nil {
			t.Fatal(err)
		}
		change(s)
		got, err := s.Digest()
		if err != nil || got == baseDigest {
			t.Errorf("%s changed: digest %s (%v), the same as the unchanged set's", name, got, err)
		}
	}
}

// entryOf is the entry of s with key, with pointers into s.
func entryOf(t *testing.T, s *Set, key string) Entry {
	t.Helper()
	for _, e := range s.Entries() {
		if e.Key == key {
			return e
		}
	}
	t.Fatalf("no entry %s", key)
	return Entry{}
}

// A pin file whose URLs carry credentials (a mirror's userinfo, a presigned query) keeps them out
// of the canonical encoding, and so out of the digest and a bundle's copy of the set: the
// encoding holds no credential and still reads as a pin file, and two credentials give one
// digest.
func TestCanonicalHoldsNoURLCredentials(t *testing.T) {
	withSecret := func(form, secret string) *Set {
		s, err := Default()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range s.Entries() {
			if e.Artifact == nil {
				continue
			}
			if form == "userinfo" {
				e.Artifact.URL = strings.Replace(e.Artifact.URL, "https://", "https://user:"+secret+"@", 1)
			} else {
				e.Artifact.URL += "?X-Amz-Signature=" + secret
			}
		}
		return s
	}
	for _, form := range []string{"userinfo", "query"} {
		a, b := withSecret(form, "canary-s3cr3t-7f1e"), withSecret(form, "another-0b4d")
		data, err := a.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "canary-s3cr3t-7f1e") {
			t.Errorf("%s: the canonical encoding holds the credential", form)
		}
		if _, err := Parse(data, "canonical"); err != nil {
			t.Errorf("%s: the canonical encoding is no pin file: %v", form, err)
		}
		da, err := a.Digest()
		if err != nil {
			t.Fatal(err)
		}
		db, err := b.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if da != db {
			t.Errorf("%s: the credential's value changes the digest", form)
		}
	}
}
