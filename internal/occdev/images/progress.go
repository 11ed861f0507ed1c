package images

import (
	"strings"
	"sync"
)

// Totals turns the per-layer events of one image's pull into running totals for a single
// progress line: report receives the bytes done and expected over all layers seen so far. Layers
// the engine already holds report no sizes and count as nothing to move; the extraction that
// follows a download is not counted again. The returned function is safe for concurrent use.
func Totals(report func(done, total int64)) func(Event) {
	var mu sync.Mutex
	type layer struct{ done, total int64 }
	layers := map[string]layer{}
	return func(ev Event) {
		if ev.Layer == "" {
			return
		}
		mu.Lock()
		l := layers[ev.Layer]
		switch {
		case ev.Total > 0 && ev.Status == "Downloading":
			l.done, l.total = ev.Current, ev.Total
		case l.total > 0 && (ev.Status == "Download complete" || ev.Status == "Pull complete"):
			l.done = l.total
		}
		layers[ev.Layer] = l
		var done, total int64
		for _, x := range layers {
			done += x.done
			total += x.total
		}
		mu.Unlock()
		report(done, total)
	}
}

// ImportNotes puts the events of an import on its step's line through note: each image's
// status but the import's own start and end ("importing", "imported").
func ImportNotes(note func(string)) func(Event) {
	return func(ev Event) {
		if ev.Status != "importing" && ev.Status != "imported" {
			note(ev.Image + ": " + ev.Status)
		}
	}
}

// DownloadsDone watches the per-layer events of one image's pull and calls done once the engine
// has every layer's bytes: each layer the pull announced has finished downloading (or was
// already there), though the engine may still be extracting them. That is when the link is free
// for the next image. It calls done at most once, and never when the progress does not say so
// (an engine whose progress names no layers, or a pull that ends first); a layer counts only
// after one download has completed, so a layer that was already there cannot make it fire while
// the others are still being announced. The returned function is safe for concurrent use.
func DownloadsDone(done func()) func(Event) {
	var mu sync.Mutex
	have := map[string]bool{}
	downloaded, fired := false, false
	return func(ev Event) {
		if ev.Layer == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ev.Status == "Download complete":
			have[ev.Layer], downloaded = true, true
		case ev.Status == "Already exists" || ev.Status == "Extracting" || ev.Status == "Pull complete":
			have[ev.Layer] = true
		case ev.Status == "Pulling fs layer" || ev.Status == "Waiting" || ev.Status == "Downloading" ||
			ev.Status == "Verifying Checksum" || strings.HasPrefix(ev.Status, "Retrying"):
			if _, seen := have[ev.Layer]; !seen {
				have[ev.Layer] = false
			}
		default:
			// Not a layer's event: "Pulling from <repository>" carries the repository as its ID.
			return
		}
		if fired || !downloaded {
			return
		}
		for _, ok := range have {
			if !ok {
				return
			}
		}
		fired = true
		done()
	}
}
