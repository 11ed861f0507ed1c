package online

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/openclaw/occ/internal/contract"
)

// downloader streams pinned files. Nothing it fetches is kept: verification needs only the
// checksum, and resolving reads the archive as it streams.
type downloader struct {
	transport http.RoundTripper
}

// open starts a GET of rawURL and returns the body of a 200 answer.
func (d downloader) open(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	shown := redactURL(rawURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", shown, unwrapURLError(err))
	}
	req.Header.Set("User-Agent", "occ")
	resp, err := (&http.Client{Transport: d.transport}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w; check the network and the proxy settings (HTTPS_PROXY)", shown, unwrapURLError(err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("download %s: the server answered %s, want 200 OK; check the URL", shown, resp.Status)
	}
	return resp.Body, nil
}

// hash streams rawURL through SHA-256 into w and returns the hex digest and the byte count.
func (d downloader) hash(ctx context.Context, rawURL string, w io.Writer) (string, int64, error) {
	body, err := d.open(ctx, rawURL)
	if err != nil {
		return "", 0, err
	}
	defer body.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, w), body)
	if err != nil {
		return "", n, fmt.Errorf("download %s: %w", redactURL(rawURL), unwrapURLError(err))
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// unwrapURLError drops the URL the HTTP client puts into its errors: it is printed redacted by
// the caller, and the client's own copy keeps a query string.
func unwrapURLError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// redactURL is a URL as messages show it: occ's one rule (contract.RedactURL) hides its
// userinfo, query, fragment and percent-encoding, which may hold credentials.
func redactURL(raw string) string { return contract.RedactURL(raw) }
