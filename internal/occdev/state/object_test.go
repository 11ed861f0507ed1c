package state

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A developer upgrades occ while an environment made by the previous release is up: its
// version 1 state.json (Kubernetes objects and a Helm release told apart by kind) still reads,
// upgraded to typed records, so `down` can remove it; a "version 1" file carrying a field
// version 1 never had is refused.
func TestVersion1RecordIsUpgraded(t *testing.T) {
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	v1 := `{
  "version": 1,
  "profile": "kubernetes",
  "cluster": {"provider": "existing", "kubeconfig": "/home/dev/.kube/config", "context": "kind-dev", "uid": "u-1"},
  "platformNamespace": "oce-system",
  "objects": [
    {"kind": "Namespace", "apiVersion": "v1", "name": "oce-system", "uid": "u-ns", "createdAt": "2025-01-02T03:04:05Z"},
    {"kind": "HelmRelease", "namespace": "oce-system", "name": "openshell-gateway", "createdAt": "2025-01-02T03:04:06Z"}
  ],
  "createdAt": "2025-01-02T03:04:00Z",
  "updatedAt": "2025-01-02T03:04:06Z"
}
`
	file := filepath.Join(p, FileName)
	if err := os.WriteFile(file, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Read(p)
	if err != nil {
		t.Fatalf("read a version 1 record: %v", err)
	}
	want := []Object{
		{Type: TypeKubernetes, APIVersion: "v1", Kind: "Namespace", Name: "oce-system", UID: "u-ns"},
		Object{Type: TypeHelmRelease, Namespace: "oce-system", Name: "openshell-gateway"},
	}
	if s.Version != Version || len(s.Objects) != 2 || !sameObject(s.Objects[0], want[0]) || s.Objects[0].UID != "u-ns" || !sameObject(s.Objects[1], want[1]) {
		t.Fatalf("upgraded record: version %d, objects %+v", s.Version, s.Objects)
	}
	if s.Objects[1].String() != "Helm release oce-system/openshell-gateway" || s.Objects[0].String() != "v1 Namespace oce-system" {
		t.Errorf("descriptions: %q, %q", s.Objects[0], s.Objects[1])
	}

	withV2Field := strings.Replace(v1, `"name": "oce-system", "uid"`, `"name": "oce-system", "type": "kubernetes", "uid"`, 1)
	if err := os.WriteFile(file, []byte(withV2Field), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), `unknown field "type"`) {
		t.Fatalf("version 1 record with a version 2 field: %v", err)
	}
}

// Each layer records its own kind of thing; a record that breaks its type's rules (a field the
// type does not have, a bad digest, a k3d name k3d could not have made, an unknown type) is
// refused before it is written, so `down` never acts on a half-understood record.
func TestRecordsAreValidatedPerType(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	labels := map[string]string{"app": "k3d", "k3d.cluster": "occ-dev-1a2b", "occ.openclaw.dev/dev-state": "0011223344556677"}
	valid := []Object{
		{Type: TypeKubernetes, APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "system:openshell", UID: "u"},
		Object{Type: TypeHelmRelease, Namespace: "oce-system", Name: "openshell-gateway"},
		{Type: TypeK3dCluster, Name: "occ-dev-1a2b", Labels: labels},
		{Type: TypePulledImage, Name: "ghcr.io/nvidia/openshell/gateway", Digest: digest, ID: digest},
		{Type: TypeClusterImage, Name: "ghcr.io/nvidia/openshell/gateway", Digest: digest},
		{Type: TypeNetwork, Name: "k3d-occ-dev-1a2b", ID: strings.Repeat("0f", 32), Labels: labels},
		{Type: TypeVolume, Name: "k3d-occ-dev-1a2b-images", Labels: labels},
		{Type: TypeComposeProject, Name: "occ-dev-1a2b"},
	}
	for _, o := range valid {
		if err := validateObject(o); err != nil {
			t.Errorf("%s refused: %v", o, err)
		}
	}
	invalid := []struct {
		o    Object
		want string
	}{
		{Object{Type: "k8s", Name: "x"}, `type "k8s" is not one this occ records`},
		{Object{Kind: "Namespace", APIVersion: "v1", Name: "x"}, `type "" is not one this occ records`},
		{Object{Type: TypeKubernetes, Kind: "Namespace", Name: "x"}, "apiVersion"},
		{Object{Type: TypeKubernetes, APIVersion: "v1", Kind: "Namespace", Name: "x", Digest: digest}, "digest is not a field of a kubernetes record"},
		{Object{Type: TypeHelmRelease, Name: "gw"}, "needs its namespace"},
		{Object{Type: TypeHelmRelease, Namespace: "ns", Name: "gw", APIVersion: "v1"}, "apiVersion is not a field"},
		{Object{Type: TypeK3dCluster, Name: "occ-dev-" + strings.Repeat("a", 30), Labels: labels}, "1 to 32"},
		{Object{Type: TypeK3dCluster, Name: "occ-dev-1a2b"}, "needs the labels"},
		{Object{Type: TypePulledImage, Name: "ghcr.io/nvidia/openshell/gateway:0.1", Digest: digest}, "without tag or digest"},
		{Object{Type: TypePulledImage, Name: "ghcr.io/nvidia/openshell/gateway", Digest: "sha256:abc"}, "64 lower-case hex"},
		{Object{Type: TypeNetwork, Name: "net", ID: "not-an-id"}, "engine ID"},
		{Object{Type: TypeVolume, Name: "vol", Labels: map[string]string{"bad key": "v"}}, "label key"},
		{Object{Type: TypeVolume, Name: "vol", Labels: map[string]string{"k": "line\nbreak"}}, "printable"},
		{Object{Type: TypeComposeProject, Name: "Upper"}, "Compose project name"},
		{Object{Type: TypeComposeProject, Name: " "}, "name is empty"},
	}
	for _, tc := range invalid {
		err := validateObject(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to mention %q", tc.o, err, tc.want)
		}
	}

	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Record(invalid[7].o); err == nil {
		t.Fatal("an invalid record was written")
	}
	if len(d.State().Objects) != 0 {
		t.Fatalf("the refused record is in the state: %+v", d.State().Objects)
	}
}

// A layer records an engine object before creating it (no ID yet) and again once it exists:
// the second call fills the ID and labels in place, keeping its position in the removal order.
func TestRecordRefreshesEngineID(t *testing.T) {
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	network := Object{Type: TypeNetwork, Name: "k3d-occ-dev-1a2b"}
	volume := Object{Type: TypeVolume, Name: "k3d-occ-dev-1a2b-images"}
	for _, o := range []Object{network, volume} {
		if err := d.Record(o); err != nil {
			t.Fatal(err)
		}
	}
	network.ID, network.Labels = strings.Repeat("0f", 32), map[string]string{"app": "k3d"}
	if err := d.Record(network); err != nil {
		t.Fatal(err)
	}
	network.Labels["app"] = "changed after recording"
	got := d.State().Objects
	if len(got) != 2 || got[0].Name != network.Name || got[0].ID != network.ID || got[0].Labels["app"] != "k3d" {
		t.Fatalf("objects after the refresh: %+v", got)
	}
}

// Several lanes of one `up` record at the same time: every record lands (none is lost to
// another lane's rewrite of state.json) and the file on disk holds all of them.
func TestConcurrentRecordsAllLand(t *testing.T) {
	p := stateDir(t)
	d, err := Create(p, sample())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const lanes, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, lanes*each)
	for l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				o := Object{Type: TypeKubernetes, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("lane-%d-%d", l, i)}
				errs <- d.Record(o)
				_ = d.State() // readers run beside the writers
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Objects) != lanes*each {
		t.Fatalf("state.json holds %d records, want %d", len(s.Objects), lanes*each)
	}
}

// A record of a type this occ has no remover for (written by a newer occ's layer) is never
// skipped: removal fails naming the type, and status says unknown rather than missing.
func TestRemoversRefuseUnregisteredTypes(t *testing.T) {
	reg := Removers{}
	o := Object{Type: TypeComposeProject, Name: "occ-dev-1a2b"}
	if _, err := reg.Remove(context.Background(), o); err == nil || !strings.Contains(err.Error(), `records of type "compose-project"`) {
		t.Fatalf("remove without a remover: %v", err)
	}
	if in := reg.Inspect(context.Background(), o); in.State != Unknown || !strings.Contains(in.Detail, "compose-project") {
		t.Fatalf("inspect without a remover: %+v", in)
	}
}

// A layer names, as an earlier name of its kind, a type another layer records under (or
// records under a name another kind reads as an earlier one): the two would remove each
// other's records, so registration refuses it and the registry is left as it was.
func TestAnAliasIsNeverTwoKinds(t *testing.T) {
	before := Kinds()
	describe := func(o Object) string { return o.Name }
	check := func(Object) error { return nil }
	for _, k := range []Kind{
		{Type: "alias-test", Aliases: []Type{TypeComposeProject}, Check: check, Describe: describe},
		{Type: "docker-volume", Check: check, Describe: describe},
		{Type: "alias-test", Aliases: []Type{"podman-network"}, Check: check, Describe: describe},
		{Type: "alias-test", Aliases: []Type{"Not A Type"}, Check: check, Describe: describe},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%s, aliases %v) was accepted", k.Type, k.Aliases)
				}
			}()
			Register(k)
		}()
	}
	if after := Kinds(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused registration changed the kinds: %v, was %v", after, before)
	}
	if got := resolveAlias("podman-network"); got != TypeNetwork {
		t.Errorf("podman-network reads as %q", got)
	}
}

// A record that carries an engine although its kind lives outside the engine, or an engine
// occ does not drive, is refused.
func TestOnlyEngineRecordsCarryAnEngine(t *testing.T) {
	if err := validateObject(Object{Type: TypeComposeProject, Name: "occ-dev-1a2b", Engine: EngineDocker}); err == nil || !strings.Contains(err.Error(), "engine is not a field") {
		t.Errorf("a Compose project with an engine: %v", err)
	}
	if err := validateObject(Object{Type: TypeVolume, Name: "vol", Engine: "containerd"}); err == nil || !strings.Contains(err.Error(), `engine "containerd"`) {
		t.Errorf("a volume on an unknown engine: %v", err)
	}
	if err := validateObject(Object{Type: TypeVolume, Name: "vol", Engine: EnginePodman}); err != nil {
		t.Errorf("a Podman volume: %v", err)
	}
}
