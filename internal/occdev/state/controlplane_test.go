package state

import (
	"strings"
	"testing"
)

// A Compose-profile `up` records its control plane (checkout, commit, snapshot, images, API,
// key path) and the API services' record; a later `down` reads exactly that back, and a record
// that was edited into nonsense (a relative snapshot path, a short commit, a URL with a
// password) is refused rather than acted on.
func TestControlPlaneRecordRoundTrip(t *testing.T) {
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cp := &ControlPlane{
		Checkout: "/src/oce", Commit: strings.Repeat("ab", 20),
		Compose: &ComposeProject{Project: "openclaw-enterprise-development-kubernetes", Snapshot: p + "/compose.yaml", Checkout: "/src/oce"},
		Images: []ControlPlaneImage{
			{Role: "development", Reference: "openclaw-enterprise-development-kubernetes-development", ID: "sha256:" + strings.Repeat("1", 64)},
			{Role: "runtime", Reference: "openclaw-enterprise-runtime:kubernetes-quickstart", ID: "sha256:" + strings.Repeat("2", 64), InCluster: "docker.io/library/openclaw-enterprise-runtime@sha256:" + strings.Repeat("2", 64)},
		},
		APIURL: "http://127.0.0.1:3000", KeyPath: p + "/initial-admin-service-key.json", KeyOwned: true, InstallationID: "ins_1",
		Subnet: "172.30.42.0/24",
	}
	if err := d.Update(func(s *State) { s.ControlPlane = cp }); err != nil {
		t.Fatal(err)
	}
	if err := d.Record(Object{Type: TypeComposeServices, Name: cp.Compose.Project}); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.ControlPlane == nil || got.ControlPlane.Compose.Snapshot != cp.Compose.Snapshot || len(got.ControlPlane.Images) != 2 || got.ControlPlane.Images[1].InCluster != cp.Images[1].InCluster || !got.ControlPlane.KeyOwned || got.ControlPlane.Subnet != cp.Subnet {
		t.Fatalf("read back %+v", got.ControlPlane)
	}
	if s := got.Objects[0].String(); s != "Compose services of openclaw-enterprise-development-kubernetes" {
		t.Errorf("record described as %q", s)
	}
	for _, c := range []struct {
		name string
		edit func(*ControlPlane)
		want string
	}{
		{"relative snapshot", func(c *ControlPlane) { c.Compose.Snapshot = "compose.yaml" }, "compose.snapshot"},
		{"short commit", func(c *ControlPlane) { c.Commit = "abc" }, "commit"},
		{"credentials in the API URL", func(c *ControlPlane) { c.APIURL = "http://admin:hunter2@127.0.0.1:3000" }, "must not carry credentials"},
		{"a host address for the subnet", func(c *ControlPlane) { c.Subnet = "172.30.42.1/24" }, "subnet"},
		{"bad image ID", func(c *ControlPlane) { c.Images[0].ID = "latest" }, "images[0].id"},
	} {
		bad := got.ControlPlane.clone()
		c.edit(bad)
		s := got.clone()
		s.ControlPlane = bad
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a refusal naming %s", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the refusal repeats the password: %v", c.name, err)
		}
	}
}
