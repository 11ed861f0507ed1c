package online

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// archiveFacts is what one pass over a source archive establishes.
type archiveFacts struct {
	SHA256 string
	Size   int64
	// TopDirectory is the one directory every entry lies under; empty when the entries do not
	// share one.
	TopDirectory string
	// Commit is the comment of the archive's pax global header: git archive, which makes
	// GitHub's tag tarballs, writes the id of the archived commit there. Empty when absent.
	Commit string
	// ChartDirs are the directories (relative to TopDirectory) holding a Chart.yaml.
	ChartDirs []string
}

// scanArchive streams the tar.gz at rawURL once: the bytes go through SHA-256 as the tar reader
// walks the entries, and whatever follows the tar's end (padding, the gzip trailer) is drained
// into the hash too. No entry is extracted.
func (d downloader) scanArchive(ctx context.Context, rawURL string) (*archiveFacts, error) {
	shown := redactURL(rawURL)
	body, err := d.open(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	h := sha256.New()
	count := &counter{}
	tee := io.TeeReader(body, io.MultiWriter(h, count))
	gz, err := gzip.NewReader(tee)
	if err != nil {
		return nil, fmt.Errorf("read %s: it is not a gzip-compressed tar archive (%v); check the URL", shown, err)
	}
	facts := &archiveFacts{}
	tops := map[string]bool{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", shown, unwrapURLError(err))
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			if c, ok := hdr.PAXRecords["comment"]; ok && facts.Commit == "" {
				facts.Commit = strings.TrimSpace(c)
			}
			continue
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		top, rest, _ := strings.Cut(name, "/")
		tops[top] = true
		if path.Base(rest) == "Chart.yaml" && hdr.Typeflag == tar.TypeReg {
			facts.ChartDirs = append(facts.ChartDirs, path.Dir(rest))
		}
	}
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return nil, fmt.Errorf("read %s: %w", shown, unwrapURLError(err))
	}
	if len(tops) == 1 {
		for t := range tops {
			facts.TopDirectory = t
		}
	}
	sort.Strings(facts.ChartDirs)
	facts.SHA256 = hex.EncodeToString(h.Sum(nil))
	facts.Size = count.n
	return facts, nil
}

type counter struct{ n int64 }

func (c *counter) Write(b []byte) (int, error) {
	c.n += int64(len(b))
	return len(b), nil
}
