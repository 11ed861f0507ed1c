package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/contract"
)

// OCC HTTP conventions the development checks rely on.
const (
	// ServiceKeyHeader carries a service key; OCC has no bearer scheme.
	ServiceKeyHeader = "x-api-key"
	// APITimeout bounds every authenticated call `dev up` makes.
	APITimeout = 15 * time.Second
	// maxResponseBytes bounds what is read of any answer: these are small JSON documents.
	maxResponseBytes = 1 << 20
)

// NewAPIClient returns the HTTP client the development checks use: the given per-request
// timeout, no cookie jar, and redirects returned instead of followed, so a key is only ever
// sent to the origin it was meant for.
func NewAPIClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// ParseAPIURL checks that raw is an OCC origin: http or https with a host and nothing else.
func ParseAPIURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("OCC URL must be an origin without credentials, a path, a query, or a fragment (got %q)", redactURL(raw))
	}
	u.Path = ""
	return u, nil
}

// apiCall is one request to OCC.
type apiCall struct {
	client *http.Client
	origin *url.URL
	path   string
	// key is sent in ServiceKeyHeader when set and scrubbed from every error text.
	key string
}

// envelope is the success shape of every OCC answer.
type envelope struct {
	Data json.RawMessage `json:"data"`
	Meta json.RawMessage `json:"meta"`
}

// do performs a GET and returns the `data` member of a 2xx answer.
func (c apiCall) do(ctx context.Context) (json.RawMessage, error) {
	target := c.origin.JoinPath(c.path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set(ServiceKeyHeader, c.key)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, c.scrub(fmt.Errorf("GET %s: %w", redactURL(target.String()), err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, c.scrub(fmt.Errorf("GET %s: read answer (HTTP %d): %w", redactURL(target.String()), resp.StatusCode, err))
	}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, c.scrub(fmt.Errorf("GET %s: OCC redirected (HTTP %d) to %q; redirects are not followed, so point occ at the API origin itself", redactURL(target.String()), resp.StatusCode, redactURL(resp.Header.Get("Location"))))
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && (e.Error.Code != "" || e.Error.Message != "") {
			return nil, c.scrub(fmt.Errorf("OCC operation failed (HTTP %d): %s: %s", resp.StatusCode, e.Error.Code, truncate(e.Error.Message, 300)))
		}
		return nil, c.scrub(fmt.Errorf("OCC operation failed (HTTP %d)", resp.StatusCode))
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) == 0 || len(env.Meta) == 0 {
		return nil, fmt.Errorf("OCC returned an invalid response (HTTP %d)", resp.StatusCode)
	}
	return env.Data, nil
}

// scrub removes the key from an error text: a transport error or an echoing proxy could quote
// the request header back.
func (c apiCall) scrub(err error) error {
	if c.key == "" || !strings.Contains(err.Error(), c.key) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), c.key, "[redacted]"))
}

// redactURL is a URL as messages show it: occ's one rule (contract.RedactURL).
func redactURL(raw string) string { return contract.RedactURL(raw) }
