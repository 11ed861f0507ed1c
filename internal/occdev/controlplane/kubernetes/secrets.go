package kubernetes

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
)

// redacted is what a Secret prints as.
const redacted = "[redacted]"

// Secret is a generated credential. It prints as a placeholder with every fmt verb and in JSON,
// so it cannot reach output, logs, errors or the state file by accident; Reveal is the only way
// to the value, and only the builders of Kubernetes Secrets call it.
type Secret struct{ value string }

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) Format(f fmt.State, _ rune)   { _, _ = io.WriteString(f, redacted) }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Reveal returns the value, for the Secret objects that carry it.
func (s Secret) Reveal() string { return s.value }

func secretOf(v string) Secret       { return Secret{value: v} }
func (s *Secret) set(v string)       { s.value = v }
func (s Secret) empty() bool         { return s.value == "" }
func (s Secret) revealBytes() []byte { return []byte(s.value) }

// check refuses anything but 48 lower-case hex characters, the only form that is safe to
// interpolate into init.sql and the database URLs.
func (s Secret) check() error {
	if len(s.value) != 2*secretBytes || !hexSecret.MatchString(s.value) {
		return errors.New("a development credential is not 48 lower-case hex characters")
	}
	return nil
}

// secretBytes is how much randomness each credential has: 24 bytes, written as 48 lower-case
// hex characters (the reference launcher's size; hex is also what makes the literal
// interpolation into init.sql and the database URLs safe).
const secretBytes = 24

var hexSecret = regexp.MustCompile(`^[a-f0-9]+$`)

// Credentials are the four generated credentials of the profile.
type Credentials struct {
	// PostgresPassword is the superuser password (Secret postgres-bootstrap, key password).
	PostgresPassword Secret
	// MigratorPassword and ApplicationPassword are the occ_migrator and occ_app role passwords,
	// created by init.sql and used in the occ-database URLs.
	MigratorPassword    Secret
	ApplicationPassword Secret
	// AuthSecret signs Better Auth sessions (Secret occ-auth, key secret).
	AuthSecret Secret
	// GatewayKey is the routing's private Gateway API key (Secret occ-private-gateway-key, key
	// occ); it is only stored when the routing controllers are installed.
	GatewayKey Secret
}

// GenerateCredentials draws the four credentials from random (crypto/rand.Reader in
// production; tests pass a canary source).
func GenerateCredentials(random io.Reader) (*Credentials, error) {
	var c Credentials
	for _, s := range []*Secret{&c.PostgresPassword, &c.MigratorPassword, &c.ApplicationPassword, &c.AuthSecret, &c.GatewayKey} {
		v, err := randomHex(random)
		if err != nil {
			return nil, err
		}
		s.set(v)
	}
	return &c, nil
}

func randomHex(random io.Reader) (string, error) {
	b := make([]byte, secretBytes)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("generate a development credential: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func (c *Credentials) check() error {
	for _, s := range []Secret{c.PostgresPassword, c.MigratorPassword, c.ApplicationPassword, c.AuthSecret, c.GatewayKey} {
		if err := s.check(); err != nil {
			return err
		}
	}
	return nil
}

// initSQL creates the migrator and application roles and the schemas, like the checkout's
// migrations/init-local.sql but with the generated passwords. The passwords are interpolated
// literally, which is safe only because they are hex (checked before use).
func initSQL(c *Credentials) string {
	return strings.Join([]string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;", MigratorRole, c.MigratorPassword.Reveal()),
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;", ApplicationRole, c.ApplicationPassword.Reveal()),
		fmt.Sprintf("GRANT CREATE ON DATABASE %s TO %s;", DatabaseName, MigratorRole),
		fmt.Sprintf("CREATE SCHEMA occ AUTHORIZATION %s;", MigratorRole),
		fmt.Sprintf("CREATE SCHEMA drizzle AUTHORIZATION %s;", MigratorRole),
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC;",
		"",
	}, "\n")
}

var rolePassword = regexp.MustCompile(`(?m)^CREATE ROLE (occ_migrator|occ_app) LOGIN PASSWORD '([a-f0-9]{48})' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;$`)

// databaseURL is the in-cluster PostgreSQL URL for role with password.
func databaseURL(namespace, role string, password Secret) string {
	return fmt.Sprintf("postgresql://%s:%s@%s.%s.svc.cluster.local:%d/%s", role, password.Reveal(), Postgres, namespace, PostgresPort, DatabaseName)
}

// PostgresBootstrapSecretObject holds the superuser password and init.sql.
func PostgresBootstrapSecretObject(namespace string, own Ownership, c *Credentials) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: PostgresBootstrapSecret, Namespace: namespace, Labels: own.with(nil)},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			PostgresPasswordKey: c.PostgresPassword.revealBytes(),
			PostgresInitKey:     []byte(initSQL(c)),
		},
	}
}

// ControlPlaneSecretObjects are the Secrets the OCE chart reads: the exact Installation bytes,
// the database URLs of the two roles, and the auth secret.
func ControlPlaneSecretObjects(namespace string, own Ownership, c *Credentials, installation []byte) []*corev1.Secret {
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: own.with(nil)},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}
	}
	return []*corev1.Secret{
		secret(InstallationSecret, map[string][]byte{InstallationKey: installation}),
		secret(DatabaseSecret, map[string][]byte{
			ApplicationURLKey: []byte(databaseURL(namespace, ApplicationRole, c.ApplicationPassword)),
			MigrationURLKey:   []byte(databaseURL(namespace, MigratorRole, c.MigratorPassword)),
		}),
		secret(AuthSecret, map[string][]byte{AuthSecretKey: c.AuthSecret.revealBytes()}),
	}
}

// LoadOrGenerateCredentials returns the credentials a previous run stored in the cluster, or
// new ones. PostgreSQL keeps the passwords of its first start in its data volume, so a repeated
// step must reuse them: the superuser and role passwords are read back from this state's
// postgres-bootstrap Secret (init.sql has the exact form this package writes), the auth secret
// from occ-auth when that exists. A same-named Secret that is not this state's is refused.
func LoadOrGenerateCredentials(ctx context.Context, client clientset.Interface, namespace string, own Ownership, random io.Reader) (*Credentials, error) {
	fresh, err := GenerateCredentials(random)
	if err != nil {
		return nil, err
	}
	secrets := client.CoreV1().Secrets(namespace)
	boot, err := secrets.Get(ctx, PostgresBootstrapSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fresh, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Secret %s/%s: %w", namespace, PostgresBootstrapSecret, err)
	}
	if !own.owns(boot.Labels) {
		return nil, notOurs("Secret", namespace, PostgresBootstrapSecret)
	}
	c := &Credentials{PostgresPassword: secretOf(string(boot.Data[PostgresPasswordKey])), AuthSecret: fresh.AuthSecret, GatewayKey: fresh.GatewayKey}
	for _, m := range rolePassword.FindAllStringSubmatch(string(boot.Data[PostgresInitKey]), -1) {
		switch m[1] {
		case MigratorRole:
			c.MigratorPassword = secretOf(m[2])
		case ApplicationRole:
			c.ApplicationPassword = secretOf(m[2])
		}
	}
	if c.PostgresPassword.empty() || c.MigratorPassword.empty() || c.ApplicationPassword.empty() || c.check() != nil {
		return nil, fmt.Errorf("Secret %s/%s belongs to this development state but its %s or %s is not in the form occ writes: it was edited; run occ dev down and up again",
			namespace, PostgresBootstrapSecret, PostgresPasswordKey, PostgresInitKey)
	}
	for _, kept := range []struct {
		name, key string
		to        *Secret
	}{{AuthSecret, AuthSecretKey, &c.AuthSecret}, {GatewayKeySecret, GatewayKeySecretKey, &c.GatewayKey}} {
		s, err := secrets.Get(ctx, kept.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("read Secret %s/%s: %w", namespace, kept.name, err)
		case !own.owns(s.Labels):
			return nil, notOurs("Secret", namespace, kept.name)
		default:
			*kept.to = secretOf(string(s.Data[kept.key]))
			if kept.to.check() != nil {
				return nil, fmt.Errorf("Secret %s/%s belongs to this development state but its %s is not in the form occ writes: it was edited; run occ dev down and up again", namespace, kept.name, kept.key)
			}
		}
	}
	return c, nil
}

// GatewayKeySecretObject holds the routing's private Gateway API key.
func GatewayKeySecretObject(namespace string, own Ownership, c *Credentials) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayKeySecret, Namespace: namespace, Labels: own.with(nil)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{GatewayKeySecretKey: c.GatewayKey.revealBytes()},
	}
}

func notOurs(kind, namespace, name string) error {
	return fmt.Errorf("%s %s/%s already exists and is not owned by this development state: occ never takes over objects it did not create; remove it or use another cluster or namespace", kind, namespace, name)
}
