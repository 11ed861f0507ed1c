package kubernetes

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// devValues are the values a Kubernetes-only `up` computes, for render tests.
func devValues(t *testing.T) Values {
	t.Helper()
	v, err := BuildValues(ValuesInput{
		Namespace: "oce-system", ControllerImage: controllerRef, HostAPIPort: 3000,
		PostgresIP: netip.MustParseAddr("10.42.0.12"), APIEndpoint: netip.MustParseAddrPort("172.28.0.2:6443"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// render renders the chart as `helm template` does (no cluster), returning the manifest and
// the hooks' manifests.
func render(t *testing.T, ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	t.Helper()
	in := action.NewInstall(new(action.Configuration))
	in.ClientOnly, in.DryRun, in.Replace = true, true, true
	in.ReleaseName, in.Namespace = ReleaseName, "oce-system"
	return in.Run(ch, vals)
}

func fixtureChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := LoadChart(fixtureCheckout)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// The development values satisfy the chart's own validation and render the chart's objects
// with them: the values occ computes are the ones the production chart accepts.
func TestDevelopmentValuesRenderTheChart(t *testing.T) {
	vals, err := devValues(t).Map()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := render(t, fixtureChart(t), vals)
	if err != nil {
		t.Fatalf("the chart refused the development values: %v", err)
	}
	kinds := map[string]bool{}
	for _, doc := range strings.Split(rel.Manifest, "\n---") {
		var obj metav1.PartialObjectMetadata
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj.Name == "" {
			continue
		}
		kinds[obj.Kind+" "+obj.Name] = true
	}
	for _, h := range rel.Hooks {
		kinds[h.Kind+" "+h.Name+" (hook)"] = true
	}
	for _, want := range []string{
		"Deployment openclaw-enterprise-api", "Deployment openclaw-enterprise-worker", "Service openclaw-enterprise-api",
		"NetworkPolicy openclaw-enterprise-default-deny", "NetworkPolicy openclaw-enterprise-api-ingress", "NetworkPolicy openclaw-enterprise-dependency-egress",
		"ServiceAccount openclaw-enterprise-api", "ServiceAccount openclaw-enterprise-worker",
		"ClusterRole openclaw-enterprise-openclaw-tenant-worker", "ClusterRole openclaw-enterprise-openclaw-tenant-api", "ClusterRole openclaw-enterprise-openclaw-tenant-configuration",
		"Job openclaw-enterprise-initialization (hook)", "NetworkPolicy openclaw-enterprise-bootstrap-isolation (hook)", "ServiceAccount openclaw-enterprise-initialization (hook)",
	} {
		if !kinds[want] {
			t.Errorf("the render lacks %s (rendered: %v)", want, kinds)
		}
	}
	if strings.Contains(rel.Manifest, "kind: Secret") || strings.Contains(rel.Manifest, "kind: PersistentVolumeClaim") {
		t.Error("the chart rendered a Secret or a PVC; the launcher creates those")
	}
	for _, want := range []string{"cidr: 10.42.0.12/32", "cidr: 172.28.0.2/32", "port: 6443", "app.kubernetes.io/name: occ-kubernetes-dev-client", "claimName: bootstrap-password"} {
		if !strings.Contains(rel.Manifest+hookManifests(rel), want) {
			t.Errorf("the render lacks %q", want)
		}
	}
}

func hookManifests(rel *release.Release) string {
	var b strings.Builder
	for _, h := range rel.Hooks {
		b.WriteString(h.Manifest)
	}
	return b.String()
}

// A hand-edited values file, or a launcher bug, gives the chart a value its production rules
// refuse: the render fails with the chart's own message before anything is created.
func TestChartValidationRefusesBadValues(t *testing.T) {
	ch := fixtureChart(t)
	cases := []struct {
		name   string
		values func(v *Values)
		raw    func(m map[string]any)
		want   string
	}{
		{"tag-only controller image", func(v *Values) { v.Images.Controller = "openclaw-enterprise-controller:kubernetes-quickstart" }, nil,
			"images.controller must be an approved immutable SHA-256 image reference"},
		{"empty auth base URL", func(v *Values) { v.Auth.BaseURL = "" }, nil,
			"auth.baseUrl must identify the public Better Auth base URL"},
		{"plain HTTP on another host", func(v *Values) { v.Auth.BaseURL = "http://console.example.com:3000" }, nil,
			"auth.baseUrl must use HTTPS unless its host is 127.0.0.1 or localhost; the bootstrap Job refuses plain HTTP elsewhere"},
		{"base URL with a path", func(v *Values) { v.Auth.BaseURL = "http://127.0.0.1:3000/console" }, nil,
			"auth.baseUrl must be an absolute http(s) origin"},
		{"admin email", func(v *Values) { v.Bootstrap.AdminEmail = "admin" }, nil,
			"bootstrap.adminEmail must contain a valid administrator email"},
		{"no API clients", func(v *Values) { v.API.Clients = nil }, nil,
			"api.clients must contain exact approved client selectors"},
		{"database subnet instead of a host", func(v *Values) { v.Database.CIDRs = []string{"10.42.0.0/16"} }, nil,
			"database.cidrs[0] must identify exactly one IPv4 host with /32"},
		{"cluster host with leading zeros", func(v *Values) { v.Cluster.CIDRs = []string{"172.28.0.2/32", "010.0.0.1/32"} }, nil,
			"cluster.cidrs[1] must identify exactly one IPv4 host with /32"},
		{"no database hosts", func(v *Values) { v.Database.CIDRs = nil }, nil,
			"database.cidrs must contain at least one IPv4 host with /32"},
		{"retired singular cidr", nil, func(m map[string]any) { m["database"].(map[string]any)["cidr"] = "10.42.0.12/32" },
			"database.cidr is retired"},
		{"installation name with outer space", func(v *Values) { v.Installation.Name = " Kubernetes development" }, nil,
			"installation.name must be 1 to 200 characters"},
		{"claim name", func(v *Values) { v.Bootstrap.Password.ClaimName = "Bootstrap_Password" }, nil,
			"bootstrap.password.claimName must be a DNS subdomain"},
		{"client namespace", func(v *Values) { v.API.Clients[0].Namespace = "Oce-System" }, nil,
			"api.clients[0].namespace must be a DNS label"},
		{"same Secret twice", nil, func(m map[string]any) { m["auth"].(map[string]any)["secretName"] = "occ-database" },
			"installation.secretName, database.secretName and auth.secretName must name distinct Secrets"},
		{"native admin without routing", nil, func(m map[string]any) {
			m["agentNativeAdmin"] = map[string]any{"enabled": true, "domain": "agents.c.oce.localhost", "sharedCookieDomain": "c.oce.localhost"}
			m["auth"].(map[string]any)["baseUrl"] = "https://console.c.oce.localhost:8443"
		}, "agentNativeAdmin requires gatewayRouting.enabled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := devValues(t)
			if c.values != nil {
				c.values(&v)
			}
			m, err := v.Map()
			if err != nil {
				t.Fatal(err)
			}
			if c.raw != nil {
				c.raw(m)
			}
			_, err = render(t, ch, m)
			if err == nil {
				t.Fatalf("the chart accepted the values")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain the chart's message %q", err, c.want)
			}
		})
	}
}

// `helm --wait` semantics on the bed: the install returns only after the hook Job completed and
// the API and worker Deployments have ready Pods. The kubelet is held back and released step by
// step, and at each step the install must still be waiting.
func TestInstallChartWaitsForTheJobAndDeployments(t *testing.T) {
	b := newBed(t)
	b.uninstallAtEnd()
	b.kubelet.pause()
	ctx := context.Background()
	createClaim(t, b)
	vals := devValues(t)
	vals.API.Clients[0].Namespace = b.ns
	done := make(chan error, 1)
	var rel *release.Release
	var mu sync.Mutex
	go func() {
		r, err := InstallChart(ctx, b.conn, ChartInstall{Chart: fixtureChart(t), Namespace: b.ns, Values: vals, Timeout: 60 * time.Second})
		mu.Lock()
		rel = r
		mu.Unlock()
		done <- err
	}()
	stillWaiting := func(stage string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("InstallChart returned (%v) while %s", err, stage)
		default:
		}
	}

	jobPod := b.waitForPod(ctx, "the initialization Job's Pod", func(p *corev1.Pod) bool { return len(p.OwnerReferences) > 0 && p.OwnerReferences[0].Kind == "Job" })
	stillWaiting("the initialization Job's Pod " + jobPod.Name + " has not run")
	b.kubelet.start(ctx, jobPod)
	waitJobComplete(t, b)
	apiPod := b.waitForPod(ctx, "an API Pod", func(p *corev1.Pod) bool { return p.Labels[labelComponent] == "api" })
	workerPod := b.waitForPod(ctx, "a worker Pod", func(p *corev1.Pod) bool { return p.Labels[labelComponent] == "worker" })
	stillWaiting("the API and worker Pods are not ready")
	b.kubelet.start(ctx, apiPod)
	waitDeploymentReady(t, b, "openclaw-enterprise-api")
	stillWaiting("the worker Pod is not ready")
	b.kubelet.start(ctx, workerPod)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("InstallChart: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("InstallChart did not return after every Pod was ready")
	}
	mu.Lock()
	defer mu.Unlock()
	if rel == nil || rel.Info.Status != release.StatusDeployed {
		t.Fatalf("release = %+v", rel)
	}
}

// A cluster that cannot start the initialization Pod (an image that is not in the node): the
// install fails within the startup timeout, naming what it waited for.
func TestInstallChartTimesOut(t *testing.T) {
	b := newBed(t)
	b.uninstallAtEnd()
	b.kubelet.pause()
	createClaim(t, b)
	vals := devValues(t)
	vals.API.Clients[0].Namespace = b.ns
	_, err := InstallChart(context.Background(), b.conn, ChartInstall{Chart: fixtureChart(t), Namespace: b.ns, Values: vals, Timeout: 3 * time.Second})
	if err == nil {
		t.Fatal("the install succeeded although no Pod ever ran")
	}
	for _, want := range []string{"helm install openclaw-enterprise in namespace " + b.ns, "within 3s", "Pods"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !b.recordedRelease(b.ns, ReleaseName) {
		t.Error("the failed release was not recorded, so down could not remove it")
	}
}

// Someone else's release of the same name in the namespace is refused, never upgraded.
func TestInstallChartRefusesAForeignRelease(t *testing.T) {
	b := newBed(t)
	b.uninstallAtEnd()
	createClaim(t, b)
	vals := devValues(t)
	vals.API.Clients[0].Namespace = b.ns
	_, _, other := b.connect()
	if _, err := InstallChart(context.Background(), other, ChartInstall{Chart: fixtureChart(t), Namespace: b.ns, Values: vals, Timeout: 60 * time.Second}); err != nil {
		t.Fatal(err)
	}
	_, err := InstallChart(context.Background(), b.conn, ChartInstall{Chart: fixtureChart(t), Namespace: b.ns, Values: vals, Timeout: 60 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "this development state did not install it") {
		t.Fatalf("a foreign release was not refused: %v", err)
	}
	if b.recordedRelease(b.ns, ReleaseName) {
		t.Error("the foreign release was recorded, so down would uninstall someone else's release")
	}
}

// createClaim stands in for the volume step, which the chart's Job mounts.
func createClaim(t *testing.T, b *bed) {
	t.Helper()
	for _, c := range VolumeClaims(b.ns, b.own) {
		b.ensure(c)
	}
}

func waitJobComplete(t *testing.T, b *bed) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := b.client.BatchV1().Jobs(b.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if j, ok := ev.Object.(*batchv1.Job); ok && j.Status.Succeeded > 0 {
			return
		}
	}
	t.Fatal(errors.New("the initialization Job did not complete after its Pod succeeded"))
}

func waitDeploymentReady(t *testing.T, b *bed, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := b.client.AppsV1().Deployments(b.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Name == name && d.Status.ReadyReplicas > 0 {
			return
		}
	}
	t.Fatalf("Deployment %s did not become ready after its Pod did", name)
}
