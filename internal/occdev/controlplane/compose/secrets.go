package compose

import (
	"context"
	"net/url"
	"regexp"
	"slices"

	"github.com/compose-spec/compose-go/v2/types"
)

// secretVariable matches the names of environment variables whose values are credentials: the
// checkout's POSTGRES_PASSWORD, OCC_AUTH_SECRET and OPENCLAW_DEV_PASSWORD, a user's
// OPENAI_API_KEY. A name that ends in _FILE or _PATH names where a secret is, not the secret
// (OCC_BOOTSTRAP_SERVICE_KEY_FILE), and does not match.
var secretVariable = regexp.MustCompile(`(?i)(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|API_?KEY|PRIVATE_?KEY|_KEY$)`)

// Secrets are the credentials the model hands its services, to be scrubbed from what occ shows
// of them: the values of environment variables named as secrets and the passwords of URLs in
// any value (the database URLs' occ_app:occ-app-local). occ generates none of them: they are
// the checkout's fixed development values, or come from the user's environment and env files,
// which is why they are read from the model and never listed by hand. Sorted, without
// duplicates.
func Secrets(p *types.Project) []string {
	var out []string
	for _, svc := range p.Services {
		for name, v := range svc.Environment {
			if v == nil || *v == "" {
				continue
			}
			if secretVariable.MatchString(name) {
				out = append(out, *v)
			}
			if u, err := url.Parse(*v); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && pw != "" {
					out = append(out, pw)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SnapshotSecrets are the Secrets of the recorded model, read from its snapshot.
func SnapshotSecrets(ctx context.Context, s Snapshot) ([]string, error) {
	p, err := LoadSnapshot(ctx, s)
	if err != nil {
		return nil, err
	}
	return Secrets(p), nil
}
