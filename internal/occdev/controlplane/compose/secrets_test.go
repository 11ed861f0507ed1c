package compose

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/testbed"
)

// A developer's Compose environment: the checkout's fixed development credentials (the database
// administrator's password, the app's and the migrator's passwords in their database URLs) and
// the secrets they set themselves in their environment (their own auth secret, their OpenAI key)
// are read back from the snapshot up recorded, so a debug bundle can scrub them from the
// services' logs; the paths, names and plain URLs beside them are not.
func TestSnapshotSecrets(t *testing.T) {
	b := newModelBed(t)
	authSecret, apiKey := testbed.CanaryHex+"a1", testbed.CanaryHex+"a2"
	m, err := b.load(nil, map[string]string{"OCC_AUTH_SECRET": authSecret, "OPENAI_API_KEY": apiKey})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SnapshotSecrets(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"openclaw-local-admin", "occ-app-local", "occ-migrator-local", "openclaw-development-password", authSecret, apiKey} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets lack %q: %q", want, got)
		}
	}
	for _, plain := range []string{"openclaw-development-auth-secret-minimum-32-bytes", "/var/lib/openclaw/bootstrap/initial-admin-service-key.json", "development", "postgresql://occ_app:occ-app-local@postgres:5432/openclaw_enterprise"} {
		if slices.Contains(got, plain) {
			t.Errorf("secrets hold %q, which is no credential of this model: %q", plain, got)
		}
	}
	if want := Secrets(m.Project); !slices.Equal(got, want) {
		t.Errorf("the snapshot's secrets %q differ from the model's %q", got, want)
	}
}

// An engineer's metrics overlay with their Grafana password: the password is among the secrets
// the snapshot yields, so a debug bundle scrubs it from everything it collects.
func TestSnapshotSecretsHoldTheGrafanaPassword(t *testing.T) {
	b := newModelBed(t)
	password := testbed.CanaryHex + "b1"
	m, err := b.load([]string{filepath.Join(b.checkout, "compose.metrics.yaml")}, map[string]string{"OCC_METRICS_GRAFANA_PASSWORD": password})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SnapshotSecrets(context.Background(), snap)
	if err != nil || !slices.Contains(got, password) {
		t.Errorf("secrets %q (%v) lack the Grafana password", got, err)
	}
	if strings.Contains(fmt.Sprintf("%+v", m.Plan()), password) {
		t.Error("the plan shows the Grafana password")
	}
}
