package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// DefaultTimeout bounds one whole download when Fetcher.Timeout is zero.
const DefaultTimeout = 10 * time.Minute

// progressStep is how many bytes pass between progress reports; the CLI redraws its bar on
// each, so a report per network read would be wasted work.
const progressStep = 256 << 10

// Progress is one report of a download's advance.
type Progress struct {
	URL string
	// Received bytes so far.
	Received int64
	// Total is the announced length, or -1 when the server did not say.
	Total int64
	// Done is set on the last report of a successful download.
	Done bool
}

// Fetcher downloads pinned artifacts into a content-addressed cache.
type Fetcher struct {
	// Client performs the requests; nil uses a plain client honouring proxy settings.
	Client *http.Client
	// CacheDir is the cache root; "" uses DefaultCacheDir. Files live at
	// <CacheDir>/sha256/<hex>, so a verified file is found again by its pin alone.
	CacheDir string
	// Timeout bounds each download from request to last byte; 0 uses DefaultTimeout.
	Timeout time.Duration
	// Progress, when set, receives reports during downloads (never for cache hits).
	Progress func(Progress)
	// Local, when set, holds artifacts by their sha256 (a bundle): a file it has is copied into
	// the cache from it, verified as a download is, instead of downloaded.
	Local Local
	// Offline refuses a download (*OfflineError): an artifact must be cached or in Local.
	Offline bool
	// PinFile is the setting that selects another pin set, which the error of a download that
	// could not reach its server suggests (OfflineFix).
	PinFile option.Setting
}

// OfflineFix is what the error of a download that could not reach its server (DownloadError)
// adds: the setting local, which takes a local copy instead, and f.PinFile for another pin set;
// "" for any other failure.
func (f *Fetcher) OfflineFix(err error, local option.Setting) string {
	var dl *DownloadError
	if !errors.As(err, &dl) {
		return ""
	}
	return "; offline, --" + local.Flag + " FILE (" + local.Env + ") takes a local copy, or " + f.PinFile.String() + " another pin set"
}

// Local is a store of artifacts by their hex sha256 (pinbundle.Opened).
type Local interface {
	Has(digest string) bool
	CopyFile(w io.Writer, sum string) (int64, error)
	// Name names it in messages ("bundle FILE").
	Name() string
}

// OfflineError is a download --offline refused.
type OfflineError struct{ URL string }

func (e *OfflineError) Error() string {
	return fmt.Sprintf("--offline: %s is not in the artifact cache or a bundle, and downloading it would reach its server; give a bundle that holds it (--bundle, OCC_DEVELOPMENT_BUNDLE) or a local copy, or drop --offline", e.URL)
}

// DefaultCacheDir is $XDG_CACHE_HOME/occ/artifacts, or ~/.cache/occ/artifacts.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("default artifact cache: %w; set XDG_CACHE_HOME or pass a cache directory", err)
	}
	return filepath.Join(base, "occ", "artifacts"), nil
}

// CacheDir is the artifact cache dir names, or DefaultCacheDir when dir is empty.
func CacheDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return DefaultCacheDir()
}

func (f *Fetcher) cacheRoot() (string, error) { return CacheDir(f.CacheDir) }

// CachePath is where the artifact with hex digest sum is (or would be) cached.
func (f *Fetcher) CachePath(sum string) (string, error) {
	root, err := f.cacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "sha256", sum), nil
}

// DescribeFetch is the dry run's account of Fetch of a into the cache cacheDir ("" for the
// default): the cache file it writes unless a verified copy is there; what names the artifact
// ("the pinned OpenShell source archive").
func DescribeFetch(a pins.Artifact, cacheDir, what string) step.Description {
	f, err := CacheFile(a, cacheDir, what)
	if err != nil {
		return step.Note("nothing known of the artifact cache: " + err.Error())
	}
	return step.Describe(f)
}

// CacheFile is DescribeFetch's item: the file Fetch of a writes into the cache cacheDir.
func CacheFile(a pins.Artifact, cacheDir, what string) (step.File, error) {
	dest, err := (&Fetcher{CacheDir: cacheDir}).CachePath(a.SHA256)
	if err != nil {
		return step.File{}, err
	}
	return step.FileAt(dest, fsutil.HashedMode, what+", unless a verified copy is cached there"), nil
}

// Fetch returns the verified artifact a, from the cache when a verified copy is there, else
// downloaded. The digest is computed while the body streams to disk, and a mismatching download
// is deleted before Fetch returns; only a verified file is ever renamed into the cache, so a
// verified artifact is downloaded once.
func (f *Fetcher) Fetch(ctx context.Context, a pins.Artifact) (*Verified, error) {
	if err := checkSum(a.SHA256); err != nil {
		return nil, fmt.Errorf("fetch %s: %w", contract.RedactURL(a.URL), err)
	}
	dest, err := f.CachePath(a.SHA256)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return nil, fmt.Errorf("create artifact cache %s: %w", filepath.Dir(dest), err)
	}
	v, err := OpenVerified(dest, a.SHA256)
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, fs.ErrNotExist):
	default:
		var sumErr *ChecksumError
		if !errors.As(err, &sumErr) {
			return nil, fmt.Errorf("read cached artifact: %w", err)
		}
		// A corrupt cache entry (disk error, interrupted copy by hand) must not block the
		// download that replaces it.
		if err := os.Remove(dest); err != nil {
			return nil, fmt.Errorf("remove corrupt cached artifact %s: %w", dest, err)
		}
	}
	if f.Local != nil && f.Local.Has("sha256:"+a.SHA256) {
		return f.copyLocal(a, dest)
	}
	if f.Offline {
		return nil, &OfflineError{URL: contract.RedactURL(a.URL)}
	}
	return f.download(ctx, a, dest)
}

// copyLocal copies the artifact from f.Local into the cache, hashed as it is written and kept
// only when it matches, as a download.
func (f *Fetcher) copyLocal(a pins.Artifact, dest string) (*Verified, error) {
	what := contract.RedactURL(a.URL) + " from " + f.Local.Name()
	tmp, err := fsutil.NewHashedTemp(dest)
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", what, err)
	}
	defer tmp.Discard()
	n, err := f.Local.CopyFile(tmp, a.SHA256)
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", what, err)
	}
	if got := tmp.Sum(); got != a.SHA256 {
		return nil, &ChecksumError{What: what + " (copy discarded)", Expected: a.SHA256, Got: got}
	}
	file, err := tmp.Keep()
	if err != nil {
		return nil, fmt.Errorf("copy %s: store in cache: %w", what, err)
	}
	return &Verified{file: file, path: dest, sum: a.SHA256, size: n}, nil
}

func (f *Fetcher) download(ctx context.Context, a pins.Artifact, dest string) (*Verified, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := f.Client
	if client == nil {
		client = &http.Client{}
	}
	// Messages and progress show the URL by occ's one rule: a credential in its userinfo or
	// query is never printed, and the HTTP client's errors, which quote the URL whole, are
	// unwrapped (unwrapURLError).
	shown := contract.RedactURL(a.URL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", shown, unwrapURLError(err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, downloadError(ctx, shown, timeout, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download %s: server answered %s, want 200 OK; check the URL in the pin file or pass a local copy", shown, resp.Status)
	}

	tmp, err := fsutil.NewHashedTemp(dest)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", shown, err)
	}
	defer tmp.Discard()
	counter := &progressWriter{url: shown, total: resp.ContentLength, report: f.Progress}
	n, err := io.CopyBuffer(io.MultiWriter(tmp, counter), resp.Body, make([]byte, hashBufferSize))
	if err != nil {
		return nil, downloadError(ctx, shown, timeout, err)
	}
	got := tmp.Sum()
	if got != a.SHA256 {
		return nil, &ChecksumError{What: shown + " (download discarded)", Expected: a.SHA256, Got: got}
	}
	file, err := tmp.Keep()
	if err != nil {
		return nil, fmt.Errorf("download %s: store in cache: %w", shown, err)
	}
	counter.finish(n)
	return &Verified{file: file, path: dest, sum: got, size: n}, nil
}

func downloadError(ctx context.Context, shown string, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &DownloadError{URL: shown, Err: fmt.Errorf("not complete after %s", timeout)}
	}
	return &DownloadError{URL: shown, Err: unwrapURLError(err)}
}

// DownloadError is a download that did not reach the server or did not finish: the network, a
// proxy or the server's name stood in the way (a wrong answer from the server is another error).
// URL is shown by occ's one rule; the message names the fixes that work offline too, and the
// caller adds its own way to pass a local copy.
type DownloadError struct {
	URL string
	Err error
}

func (e *DownloadError) Error() string {
	return fmt.Sprintf("download %s: %v; check the network and the proxy settings (HTTPS_PROXY, NO_PROXY), or fetch the file another way and pass it as a local file (it is still verified)", e.URL, e.Err)
}

func (e *DownloadError) Unwrap() error { return e.Err }

// unwrapURLError drops the URL the HTTP client puts into its errors, which keeps a query string
// and user info: the caller names the URL by occ's one rule instead.
func unwrapURLError(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

type progressWriter struct {
	url      string
	total    int64
	received int64
	reported int64
	report   func(Progress)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.received += int64(len(b))
	if p.report != nil && p.received-p.reported >= progressStep {
		p.reported = p.received
		p.report(Progress{URL: p.url, Received: p.received, Total: p.total})
	}
	return len(b), nil
}

func (p *progressWriter) finish(n int64) {
	if p.report != nil {
		p.report(Progress{URL: p.url, Received: n, Total: p.total, Done: true})
	}
}
