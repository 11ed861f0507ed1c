package kubernetes

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
)

// The restart egress policy opens the API port to the k3d network's subnet; the engine reports
// that network's subnets, and only a canonical IPv4 subnet of /16 or narrower that holds the
// API endpoint is accepted (reference messages).
func TestSelectNodeSubnet(t *testing.T) {
	ep := netip.MustParseAddr("172.28.0.2")
	got, err := SelectNodeSubnet("k3d-occ-dev-a", []string{"fd00:1::/64", "172.28.0.0/16"}, ep)
	if err != nil || got.String() != "172.28.0.0/16" {
		t.Fatalf("SelectNodeSubnet = %v, %v", got, err)
	}
	cases := []struct {
		subnets []string
		want    string
	}{
		{[]string{"172.16.0.0/12"}, "k3d network subnet 172.16.0.0/12 is broader than /16"},
		{[]string{"fd00:1::/64"}, "k3d network k3d-occ-dev-a has no IPv4 subnet containing the Kubernetes API endpoint 172.28.0.2"},
		{[]string{"10.0.0.0/24"}, "k3d network k3d-occ-dev-a has no IPv4 subnet containing the Kubernetes API endpoint"},
		{[]string{"172.28.0.1/16"}, "not canonical"},
		{nil, "has no IPv4 subnet"},
	}
	for _, c := range cases {
		if _, err := SelectNodeSubnet("k3d-occ-dev-a", c.subnets, ep); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SelectNodeSubnet(%v) error = %v, want %q", c.subnets, err, c.want)
		}
	}
}

// The values are computed from what the cluster reports; addresses the chart cannot admit are
// refused before Helm runs.
func TestBuildValuesRefusesUnusableAddresses(t *testing.T) {
	in := ValuesInput{Namespace: "oce-system", ControllerImage: controllerRef, HostAPIPort: 3000,
		PostgresIP: netip.MustParseAddr("fd00::5"), APIEndpoint: netip.MustParseAddrPort("172.28.0.2:6443")}
	if _, err := BuildValues(in); err == nil || !strings.Contains(err.Error(), "IPv4 /32") {
		t.Errorf("an IPv6 PostgreSQL address was accepted: %v", err)
	}
	in.PostgresIP, in.HostAPIPort = netip.MustParseAddr("10.42.0.9"), 0
	if _, err := BuildValues(in); err == nil || !strings.Contains(err.Error(), "development API port 0") {
		t.Errorf("port 0 was accepted: %v", err)
	}
}

// A mis-wired `up` (tag instead of in-cluster digest, relative Installation path, no recording connection)
// is refused as a whole before anything is created.
func TestNewRefusesAnIncompleteConfiguration(t *testing.T) {
	_, err := New(nil, Config{Namespace: "OCE", ControllerImage: "openclaw-enterprise-controller:kubernetes-quickstart", PostgresImage: postgresRef, InstallationFile: "installation.yaml"})
	if err == nil {
		t.Fatal("New accepted the configuration")
	}
	for _, want := range []string{`namespace "OCE"`, `controller image "openclaw-enterprise-controller:kubernetes-quickstart"`, "development API port 0", `Installation file "installation.yaml"`, "no OCE chart", "cluster connection is incomplete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// The checkout's chart must be OCE's production chart; another chart at that path is refused.
func TestLoadChartChecksTheChart(t *testing.T) {
	if _, err := LoadChart(fixtureCheckout); err != nil {
		t.Fatalf("the fixture checkout's chart: %v", err)
	}
	if _, err := LoadChart(t.TempDir()); err == nil || !strings.Contains(err.Error(), ChartPath) {
		t.Fatalf("a checkout without the chart: %v", err)
	}
}

// `up --dry-run` lists the steps and every object they create, without a cluster.
func TestDescribeStepsNamesEveryObject(t *testing.T) {
	var all strings.Builder
	for _, s := range Steps() {
		all.WriteString(s.Name + ": " + strings.Join(s.Describe(Config{}).Creates, "; ") + "\n")
	}
	for _, want := range []string{
		"Secret oce-system/postgres-bootstrap", "PersistentVolumeClaim oce-system/postgres-data", "PersistentVolumeClaim oce-system/bootstrap-password",
		"Pod oce-system/bootstrap-password-prepare", "StatefulSet oce-system/postgres", "Service oce-system/postgres",
		"NetworkPolicy oce-system/openclaw-development-postgres-egress", "NetworkPolicy oce-system/openclaw-development-kubernetes-egress",
		"Secret oce-system/occ-installation-startup", "Secret oce-system/occ-database", "Secret oce-system/occ-auth",
		"Helm release oce-system/openclaw-enterprise", "up to 10m0s",
		"ClusterRoleBinding openclaw-development-tenant-worker", "ClusterRoleBinding openclaw-development-tenant-configuration", "ClusterRoleBinding openclaw-development-tenant-secrets",
		"Deployment oce-system/occ-development-api-proxy", "Service oce-system/occ-development-api (NodePort 30080)",
	} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the dry run does not name %q:\n%s", want, all.String())
		}
	}
	// The lines come from the objects, which carry the kind, namespace and name of the manifests
	// the steps apply: a cluster-scoped binding has no namespace, a Secret is described by its
	// keys and never by its values.
	var objs []string
	for _, s := range Steps() {
		for _, o := range s.Describe(Config{Namespace: "ns"}).Objects {
			objs = append(objs, o.Kind+"|"+o.Namespace+"|"+o.Name+"|"+o.Note)
		}
	}
	for _, want := range []string{
		"ClusterRoleBinding||" + TenantWorkerBinding + "|",
		"Secret|ns|" + PostgresBootstrapSecret + "|keys " + PostgresInitKey + ", " + PostgresPasswordKey,
		"Secret|ns|" + InstallationSecret + "|key " + InstallationKey + "; holds the Installation's exact bytes",
		"PersistentVolumeClaim|ns|" + PostgresDataClaim + "|" + StorageClassName + ", 1Gi",
		"StatefulSet|ns|" + Postgres + "|",
		"Service|ns|" + Postgres + "|",
		"Helm release|ns|" + ReleaseName + "|from the checkout's " + ChartPath + ", waiting up to 10m0s for the initialization Job and the API and worker Deployments",
	} {
		if !slices.Contains(objs, want) {
			t.Errorf("no described object %q in\n%s", want, strings.Join(objs, "\n"))
		}
	}
	if len(objs) != 17 {
		t.Errorf("%d described objects; want 17:\n%s", len(objs), strings.Join(objs, "\n"))
	}
	// What the steps wait for is typed too, named as waitReady and the Pod wait name it.
	var waits []string
	for _, s := range Steps() {
		for _, w := range s.Describe(Config{Namespace: "ns"}).Waits {
			waits = append(waits, s.Name+": "+w.Kind+" "+w.Namespace+"/"+w.Name)
		}
	}
	want := []string{"Prepare the bootstrap volume: Pod ns/" + PreparePod, "Start PostgreSQL: " + postgresWorkload.kind + " ns/" + Postgres,
		"Start the development API proxy: " + proxyWorkload.kind + " ns/" + ProxyDeployment}
	if !slices.Equal(waits, want) {
		t.Errorf("waits %q; want %q", waits, want)
	}
}

// A note for an object its step does not apply (a renamed object, a misspelled kind) stops the
// dry run instead of being dropped silently.
func TestDescribeObjectsRefusesANoteForAnotherObject(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a note for an object the step does not apply was dropped")
		}
	}()
	kubeobj.Describe(describing(Config{}).proxyManifests(), map[string]string{"Deployment postgres": "waits until ready"})
}
