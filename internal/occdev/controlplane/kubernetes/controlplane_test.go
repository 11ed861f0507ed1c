package kubernetes

import (
	"bytes"
	"context"
	"io"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"

	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/progress"
)

const (
	controllerRef = "docker.io/library/openclaw-enterprise-controller@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	postgresRef   = "docker.io/library/postgres@sha256:86c951e05bf56c93d95d397747fb8820ac76cc3bedb78f43abd83eedbe3666ae"
)

// newControlPlane is a control plane for the bed with the fixture chart.
func (b *bed) newControlPlane(random io.Reader, helmLog func(string, ...any)) (*ControlPlane, string, []byte) {
	b.t.Helper()
	ch, err := LoadChart(fixtureCheckout)
	if err != nil {
		b.t.Fatal(err)
	}
	installation, data := writeInstallation(b.t)
	cp, err := New(b.conn, Config{
		Namespace: b.ns, ControllerImage: controllerRef, PostgresImage: postgresRef,
		HostAPIPort: 3000, InstallationFile: installation, Chart: ch,
		NodeNetwork: "k3d-occ-dev-test", NodeSubnets: []string{"fd00::/64", b.nodeSubnet().String()},
		StartupTimeout: 90e9, Random: random, HelmLog: helmLog,
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return cp, installation, data
}

var hex48 = regexp.MustCompile(`^[a-f0-9]{48}$`)

// `occ dev up` with OCC_DEVELOPMENT_CONTROL_PLANE=kubernetes on a fresh cluster: every object of
// the in-cluster control plane exists with its exact name, keys and labels, the chart was
// installed and waited for, and a second run converges on the same objects and credentials.
func TestUpCreatesTheControlPlaneAndConverges(t *testing.T) {
	b := newBed(t)
	b.uninstallAtEnd()
	ctx := context.Background()
	cp, _, installation := b.newControlPlane(nil, nil)
	if err := cp.Up(ctx); err != nil {
		t.Fatalf("Up: %v", err)
	}
	first := b.snapshot(ctx)
	b.checkObjects(ctx, installation)
	b.checkDescribedAsRecorded(cp.cfg)

	again, _, _ := b.newControlPlane(nil, nil)
	if err := again.Up(ctx); err != nil {
		t.Fatalf("second Up: %v", err)
	}
	second := b.snapshot(ctx)
	for key, data := range first.secrets {
		if !bytes.Equal(second.secrets[key], data) {
			t.Errorf("second run changed %s: credentials must be reused, PostgreSQL keeps the first ones", key)
		}
	}
	if first.statefulSetUID != second.statefulSetUID || first.proxyUID != second.proxyUID {
		t.Errorf("second run replaced objects instead of converging (StatefulSet %s→%s, proxy %s→%s)", first.statefulSetUID, second.statefulSetUID, first.proxyUID, second.proxyUID)
	}
	if rel := again.Release(); rel == nil || rel.Version != 2 || rel.Info.Status != release.StatusDeployed {
		t.Errorf("second run's release = %+v, want revision 2 deployed (an upgrade of this state's release)", again.Release())
	}
}

// checkDescribedAsRecorded asserts that the dry run of cfg names exactly the objects and the
// Helm release the run recorded in its state, by the records' own kind, namespace and name.
func (b *bed) checkDescribedAsRecorded(cfg Config) {
	b.t.Helper()
	var described, recorded []string
	for _, s := range Steps() {
		d := s.Describe(cfg)
		for _, o := range d.Objects {
			described = append(described, o.Kind+" "+o.Namespace+"/"+o.Name)
		}
		if len(d.Objects) != len(d.Creates) {
			b.t.Errorf("step %q describes %d objects in %d lines", s.Name, len(d.Objects), len(d.Creates))
		}
	}
	for _, o := range b.dir.State().Objects {
		switch o.Type {
		case kubeobj.TypeObject:
			recorded = append(recorded, o.Kind+" "+o.Namespace+"/"+o.Name)
		case helmrelease.TypeRelease:
			recorded = append(recorded, "Helm release "+o.Namespace+"/"+o.Name)
		default:
			recorded = append(recorded, o.String())
		}
	}
	slices.Sort(described)
	slices.Sort(recorded)
	if !slices.Equal(described, recorded) {
		b.t.Errorf("the dry run describes\n  %s\nthe run recorded\n  %s", strings.Join(described, "\n  "), strings.Join(recorded, "\n  "))
	}
}

// nodeSubnet stands in for the k3d network's subnet: the /24 around the address the bed's API
// server reports for itself (envtest's apiserver reports 192.0.2.2, not a real node).
func (b *bed) nodeSubnet() netip.Prefix {
	b.t.Helper()
	api, err := KubernetesAPIEndpoint(context.Background(), b.client)
	if err != nil {
		b.t.Fatal(err)
	}
	return netip.PrefixFrom(api.Addr(), 24).Masked()
}

type snapshot struct {
	secrets        map[string][]byte
	statefulSetUID string
	proxyUID       string
}

func (b *bed) snapshot(ctx context.Context) snapshot {
	b.t.Helper()
	s := snapshot{secrets: map[string][]byte{}}
	for _, name := range []string{PostgresBootstrapSecret, DatabaseSecret, AuthSecret} {
		sec, err := b.client.CoreV1().Secrets(b.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.t.Fatal(err)
		}
		for k, v := range sec.Data {
			s.secrets[name+"/"+k] = v
		}
	}
	sts, err := b.client.AppsV1().StatefulSets(b.ns).Get(ctx, Postgres, metav1.GetOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	proxy, err := b.client.AppsV1().Deployments(b.ns).Get(ctx, ProxyDeployment, metav1.GetOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	s.statefulSetUID, s.proxyUID = string(sts.UID), string(proxy.UID)
	return s
}

// checkObjects asserts the Kubernetes-only profile's objects (PostgreSQL, its Secrets and PVCs,
// the bootstrap PVC, the API proxy) and the chart release.
func (b *bed) checkObjects(ctx context.Context, installation []byte) {
	t := b.t
	t.Helper()
	core := b.client.CoreV1()
	owned := func(kind, name string, labels map[string]string) {
		t.Helper()
		if !b.own.owns(labels) {
			t.Errorf("%s %s lacks the ownership labels: %v", kind, name, labels)
		}
		ns := b.ns
		if kind == "ClusterRoleBinding" {
			ns = ""
		}
		if !b.recorded(kind, ns, name) {
			t.Errorf("%s %s was not recorded in the state", kind, name)
		}
	}

	boot, err := core.Secrets(b.ns).Get(ctx, PostgresBootstrapSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned("Secret", PostgresBootstrapSecret, boot.Labels)
	if len(boot.Data) != 2 || !hex48.Match(boot.Data[PostgresPasswordKey]) {
		t.Errorf("Secret %s has keys %v; want exactly password (48 hex) and init.sql", PostgresBootstrapSecret, keys(boot.Data))
	}
	roles := rolePassword.FindAllStringSubmatch(string(boot.Data[PostgresInitKey]), -1)
	if len(roles) != 2 || roles[0][1] != MigratorRole || roles[1][1] != ApplicationRole {
		t.Fatalf("init.sql does not create %s and %s:\n%s", MigratorRole, ApplicationRole, boot.Data[PostgresInitKey])
	}
	for _, stmt := range []string{"GRANT CREATE ON DATABASE openclaw_enterprise TO occ_migrator;", "CREATE SCHEMA occ AUTHORIZATION occ_migrator;", "CREATE SCHEMA drizzle AUTHORIZATION occ_migrator;", "REVOKE CREATE ON SCHEMA public FROM PUBLIC;"} {
		if !strings.Contains(string(boot.Data[PostgresInitKey]), stmt) {
			t.Errorf("init.sql lacks %q", stmt)
		}
	}
	migPw, appPw := roles[0][2], roles[1][2]

	want := map[string]map[string]string{
		InstallationSecret: {InstallationKey: string(installation)},
		DatabaseSecret: {
			ApplicationURLKey: "postgresql://occ_app:" + appPw + "@postgres." + b.ns + ".svc.cluster.local:5432/openclaw_enterprise",
			MigrationURLKey:   "postgresql://occ_migrator:" + migPw + "@postgres." + b.ns + ".svc.cluster.local:5432/openclaw_enterprise",
		},
	}
	for name, data := range want {
		s, err := core.Secrets(b.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned("Secret", name, s.Labels)
		if len(s.Data) != len(data) {
			t.Errorf("Secret %s has keys %v, want %v", name, keys(s.Data), keys(data))
		}
		for k, v := range data {
			if string(s.Data[k]) != v {
				t.Errorf("Secret %s key %s = %q, want %q", name, k, s.Data[k], v)
			}
		}
	}
	auth, err := core.Secrets(b.ns).Get(ctx, AuthSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned("Secret", AuthSecret, auth.Labels)
	if len(auth.Data) != 1 || !hex48.Match(auth.Data[AuthSecretKey]) {
		t.Errorf("Secret %s = keys %v, want exactly secret (48 hex)", AuthSecret, keys(auth.Data))
	}

	for _, name := range []string{PostgresDataClaim, BootstrapClaim} {
		c, err := core.PersistentVolumeClaims(b.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned("PersistentVolumeClaim", name, c.Labels)
		size := c.Spec.Resources.Requests[corev1.ResourceStorage]
		if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != StorageClassName || size.String() != "1Gi" || len(c.Spec.AccessModes) != 1 || c.Spec.AccessModes[0] != corev1.ReadWriteOnce {
			t.Errorf("PVC %s = %+v, want ReadWriteOnce local-path 1Gi", name, c.Spec)
		}
	}

	prep, err := core.Pods(b.ns).Get(ctx, PreparePod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned("Pod", PreparePod, prep.Labels)
	if prep.Status.Phase != corev1.PodSucceeded || prep.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != BootstrapClaim {
		t.Errorf("prepare Pod phase %s, volumes %+v", prep.Status.Phase, prep.Spec.Volumes)
	}

	sts, err := b.client.AppsV1().StatefulSets(b.ns).Get(ctx, Postgres, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned("StatefulSet", Postgres, sts.Labels)
	if !b.own.owns(sts.Spec.Template.Labels) || sts.Spec.Template.Labels["app"] != Postgres || sts.Spec.ServiceName != Postgres {
		t.Errorf("StatefulSet template labels %v, serviceName %q", sts.Spec.Template.Labels, sts.Spec.ServiceName)
	}
	pg := sts.Spec.Template.Spec.Containers[0]
	if pg.Image != postgresRef || pg.ImagePullPolicy != corev1.PullNever || pg.Env[1].ValueFrom.SecretKeyRef.Name != PostgresBootstrapSecret {
		t.Errorf("postgres container = %+v", pg)
	}
	svc, err := core.Services(b.ns).Get(ctx, Postgres, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned("Service", Postgres, svc.Labels)
	pgPod, err := core.Pods(b.ns).Get(ctx, PostgresPod, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the StatefulSet controller did not create %s: %v", PostgresPod, err)
	}

	for _, name := range []string{PostgresEgressPolicy, KubernetesEgressPolicy} {
		p, err := b.client.NetworkingV1().NetworkPolicies(b.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned("NetworkPolicy", name, p.Labels)
	}
	kp, _ := b.client.NetworkingV1().NetworkPolicies(b.ns).Get(ctx, KubernetesEgressPolicy, metav1.GetOptions{})
	api, err := KubernetesAPIEndpoint(ctx, b.client)
	if err != nil {
		t.Fatal(err)
	}
	if got := kp.Spec.Egress[0].To[0].IPBlock.CIDR; got != b.nodeSubnet().String() || kp.Spec.Egress[0].Ports[0].Port.IntValue() != int(api.Port()) {
		t.Errorf("Kubernetes egress policy admits %s port %v, want %s port %d", got, kp.Spec.Egress[0].Ports[0].Port, b.nodeSubnet(), api.Port())
	}

	// The chart: its release holds the development values, and Helm waited for its workloads.
	cfg := new(action.Configuration)
	if err := cfg.Init(b.helm(), b.ns, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	rel, err := action.NewGet(cfg).Run(ReleaseName)
	if err != nil {
		t.Fatalf("the OCE release is missing: %v", err)
	}
	if !b.recordedRelease(b.ns, ReleaseName) {
		t.Error("the Helm release was not recorded in the state")
	}
	if rel.Info.Status != release.StatusDeployed || !b.own.owns(rel.Labels) {
		t.Errorf("release status %s labels %v", rel.Info.Status, rel.Labels)
	}
	v := rel.Config
	get := func(path ...string) any {
		var cur any = v
		for _, p := range path {
			m, _ := cur.(map[string]any)
			cur = m[p]
		}
		return cur
	}
	checks := map[string]any{
		"images.controller":            controllerRef,
		"installation.name":            "Kubernetes development",
		"auth.baseUrl":                 "http://127.0.0.1:3000",
		"bootstrap.adminEmail":         "admin@development.openclaw.invalid",
		"bootstrap.password.claimName": "bootstrap-password",
		"database.cidrs":               pgPod.Status.PodIP + "/32",
		"cluster.cidrs":                api.Addr().String() + "/32",
		"api.clients.namespace":        b.ns,
		"api.clients.podLabels":        DevelopmentClient,
		"resources.limits.memory":      "1Gi",
		"resources.requests.cpu":       "100m",
	}
	for key, want := range checks {
		path := strings.Split(key, ".")
		var got any
		switch key {
		case "database.cidrs", "cluster.cidrs":
			list, _ := get(path...).([]any)
			if len(list) == 1 {
				got = list[0]
			}
		case "api.clients.namespace", "api.clients.podLabels":
			list, _ := get("api", "clients").([]any)
			if len(list) == 1 {
				c := list[0].(map[string]any)
				if key == "api.clients.namespace" {
					got = c["namespace"]
				} else {
					got = c["podLabels"].(map[string]any)["app.kubernetes.io/name"]
				}
			}
		default:
			got = get(path...)
		}
		if got != want {
			t.Errorf("release value %s = %v, want %v", key, got, want)
		}
	}
	if port, _ := get("cluster", "port").(float64); int(port) != int(api.Port()) {
		t.Errorf("release value cluster.port = %v, want %d", get("cluster", "port"), api.Port())
	}
	job, err := b.client.BatchV1().Jobs(b.ns).Get(ctx, ReleaseName+"-initialization", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the initialization hook Job is missing: %v", err)
	}
	if job.Status.Succeeded != 1 {
		t.Errorf("initialization Job status %+v: Helm returned before it completed", job.Status)
	}
	for _, name := range []string{"openclaw-enterprise-api", "openclaw-enterprise-worker"} {
		d, err := b.client.AppsV1().Deployments(b.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("chart Deployment %s: %v", name, err)
		}
		if d.Status.ReadyReplicas != 1 {
			t.Errorf("Deployment %s has %d ready replicas: Helm returned before it was ready", name, d.Status.ReadyReplicas)
		}
	}

	for _, c := range []struct{ name, role, sa string }{
		{TenantWorkerBinding, "openclaw-enterprise-openclaw-tenant-worker", WorkerServiceAccount},
		{TenantConfigurationBinding, "openclaw-enterprise-openclaw-tenant-configuration", APIServiceAccount},
		{TenantSecretsBinding, "openclaw-enterprise-openclaw-tenant-api", APIServiceAccount},
	} {
		crb, err := b.client.RbacV1().ClusterRoleBindings().Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned("ClusterRoleBinding", c.name, crb.Labels)
		if crb.RoleRef.Name != c.role || len(crb.Subjects) != 1 || crb.Subjects[0].Name != c.sa || crb.Subjects[0].Namespace != b.ns {
			t.Errorf("ClusterRoleBinding %s = %+v %+v", c.name, crb.RoleRef, crb.Subjects)
		}
		if _, err := b.client.RbacV1().ClusterRoles().Get(ctx, c.role, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRoleBinding %s refers to %s, which the chart did not create: %v", c.name, c.role, err)
		}
	}

	proxy, err := b.client.AppsV1().Deployments(b.ns).Get(ctx, ProxyDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned("Deployment", ProxyDeployment, proxy.Labels)
	if proxy.Spec.Template.Labels[labelName] != DevelopmentClient || !b.own.owns(proxy.Spec.Template.Labels) || proxy.Status.ReadyReplicas != 1 {
		t.Errorf("proxy template labels %v, ready %d", proxy.Spec.Template.Labels, proxy.Status.ReadyReplicas)
	}
	ps, err := core.Services(b.ns).Get(ctx, ProxyService, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned("Service", ProxyService, ps.Labels)
	if ps.Spec.Type != corev1.ServiceTypeNodePort || ps.Spec.Ports[0].NodePort != ProxyNodePort || ps.Spec.Ports[0].Port != ProxyPort {
		t.Errorf("proxy Service = %+v", ps.Spec)
	}
	// The chart's API ingress policy admits exactly the proxy's labels from this namespace.
	ing, err := b.client.NetworkingV1().NetworkPolicies(b.ns).Get(ctx, "openclaw-enterprise-api-ingress", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from := ing.Spec.Ingress[0].From
	if len(from) != 1 || from[0].PodSelector.MatchLabels[labelName] != DevelopmentClient || from[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != b.ns {
		t.Errorf("API ingress admits %+v, want only the development proxy", from)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// `k3d cluster stop/start` restarts the node: the PostgreSQL Pod is gone and comes back with
// another address. The StatefulSet (run by the real controller here) recreates postgres-0 with
// the same claim, and the restart egress policy admits it by label, not by the old address.
func TestPostgresComesBackAfterARestart(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	cp, _, _ := b.newControlPlane(nil, nil)
	for _, s := range Steps()[:7] { // up to and including the restart egress policies
		if err := s.Run(ctx, cp, progress.Reporter{}); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
	}
	before, err := b.client.CoreV1().Pods(b.ns).Get(ctx, PostgresPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.client.CoreV1().Pods(b.ns).Delete(ctx, PostgresPod, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
		t.Fatal(err)
	}
	after := b.waitForPod(ctx, "the recreated "+PostgresPod, func(p *corev1.Pod) bool {
		return p.Name == PostgresPod && p.UID != before.UID && p.Status.PodIP != ""
	})
	if after.Status.PodIP == before.Status.PodIP {
		t.Fatalf("the played kubelet gave the new Pod the old address %s; the test proves nothing", after.Status.PodIP)
	}
	if after.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != PostgresDataClaim {
		t.Errorf("the recreated Pod mounts %+v, want claim %s", after.Spec.Volumes[0], PostgresDataClaim)
	}
	// The repeated steps converge and see the new address.
	again, _, _ := b.newControlPlane(nil, nil)
	for _, s := range Steps()[:7] {
		if err := s.Run(ctx, again, progress.Reporter{}); err != nil {
			t.Fatalf("repeated %s: %v", s.Name, err)
		}
	}
	if got := again.postgresIP.String(); got != after.Status.PodIP {
		t.Errorf("the repeated run resolved %s, want the new Pod's %s", got, after.Status.PodIP)
	}
	pol, err := b.client.NetworkingV1().NetworkPolicies(b.ns).Get(ctx, PostgresEgressPolicy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	to := pol.Spec.Egress[0].To[0]
	if to.IPBlock != nil || to.PodSelector == nil || to.PodSelector.MatchLabels["app"] != Postgres {
		t.Errorf("the PostgreSQL egress policy admits %+v, want Pods labelled app=postgres", to)
	}
}

// The prepare Pod's container fails (the controller image cannot chown the volume): the step
// fails with the reference's message and the container's exit, and PostgreSQL is not started.
func TestPreparePodFailureStopsTheRun(t *testing.T) {
	b := newBed(t)
	b.kubelet.failPod(PreparePod)
	ctx := context.Background()
	cp, _, _ := b.newControlPlane(nil, nil)
	err := cp.Up(ctx)
	if err == nil {
		t.Fatal("Up succeeded with a failing prepare Pod")
	}
	for _, want := range []string{"Prepare the bootstrap volume: ", "Pod bootstrap-password-prepare failed", "container prepare: Error, exit code 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := b.client.AppsV1().StatefulSets(b.ns).Get(ctx, Postgres, metav1.GetOptions{}); err == nil {
		t.Error("PostgreSQL was started after the prepare Pod failed")
	}
}
