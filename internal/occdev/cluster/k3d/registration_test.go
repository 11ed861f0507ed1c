package k3d

import (
	"errors"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/cluster/existing"
)

// The two providers are registered side by side and the user mixes their settings: each refuses
// the other's by name with its own words, and k3d decides its plan only from its own settings,
// asking for the engine only after they passed.
func TestTheK3dRegistrationRefusesTheExistingProvidersSettingsAndDecidesItsPlan(t *testing.T) {
	table := map[string]cluster.Registration{Name: Registration(), existing.Name: existing.Registration()}
	asked := 0
	own, rows := Registration().Settings()
	mine := own.(*ClusterOptions)
	for _, r := range rows {
		switch f := r.Field.(type) {
		case *string:
			*f = map[string]string{"cluster-name": "occ-dev-mine", "k3d-dns-resolver": "10.64.0.53"}[r.Flag]
		case *int:
			*f = map[string]int{"api-port": 6550}[r.Flag]
		}
	}
	if *mine != (ClusterOptions{ClusterName: "occ-dev-mine", APIPort: 6550, DNSResolver: "10.64.0.53"}) {
		t.Fatalf("the declared settings filled %+v, want each its own field", *mine)
	}
	o := cluster.Options{Kubeconfig: "/tmp/kc", Context: "dev", Settings: map[string]any{Name: own},
		Timeout: time.Minute, ExemptRuntimeClasses: []string{"sandbox"},
		Engine: func() (cluster.Engine, error) { asked++; return cluster.Engine{Kind: "docker"}, nil }}

	_, err := Registration().Resolve(o, cluster.Foreign(table, Name, o))
	want := `--kubeconfig "/tmp/kc" selects an existing cluster, but --cluster-provider k3d creates its own (its kubeconfig is written into the state directory): drop --kubeconfig, or use --cluster-provider existing to install into that cluster`
	if err == nil || err.Error() != want || asked != 0 {
		t.Fatalf("k3d with --kubeconfig: %v (engine asked %d times), want %q before the engine is asked", err, asked, want)
	}
	_, err = existing.Registration().Resolve(o, cluster.Foreign(table, existing.Name, o))
	want = `--cluster-name (OCC_DEVELOPMENT_KUBERNETES_CLUSTER) "occ-dev-mine" configures the k3d cluster occ creates, and --cluster-provider existing creates none: unset it, or use --cluster-provider k3d`
	if err == nil || err.Error() != want || asked != 0 {
		t.Fatalf("existing with --cluster-name: %v, want %q without asking the engine", err, want)
	}

	o.Kubeconfig, o.Context = "", ""
	p, err := Registration().Resolve(o, cluster.Foreign(table, Name, o))
	s, ok := p.Settings.(Settings)
	if err != nil || !ok || p.Name != "occ-dev-mine" || p.APIPort != 6550 || asked != 1 || s.APIPort != 6550 || s.Timeout != time.Minute ||
		s.DiskThresholdPercent != DefaultDiskThresholdPercent || s.DNS.Address != "10.64.0.53" || len(s.PodSecurityExemptRuntimeClasses) != 1 {
		t.Fatalf("k3d plan = %+v, %v (engine asked %d times)", p, err, asked)
	}
	if disk, dns := Shown(p.Settings); disk != DefaultDiskThresholdPercent || dns == nil || *dns != s.DNS {
		t.Errorf("the document shows disk %d and DNS %v, want the plan's", disk, dns)
	}
	if disk, dns := Shown(nil); disk != 0 || dns != nil {
		t.Errorf("the document shows disk %d and DNS %v of no k3d plan, want neither", disk, dns)
	}

	// An engine that cannot be located fails the plan with its own error.
	gone := errors.New("no engine at the place --engine names")
	o.Engine = func() (cluster.Engine, error) { return cluster.Engine{}, gone }
	if _, err := Registration().Resolve(o, nil); !errors.Is(err, gone) {
		t.Errorf("k3d with no engine: %v, want the locator's error", err)
	}
}
