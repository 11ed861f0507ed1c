package images

import "sync"

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
