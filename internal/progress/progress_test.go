package progress

import (
	"errors"
	"sync"
	"testing"
)

// A library reports a step with a download inside it: the sink sees begin, the transfer note
// and the end with the step's error, each naming the step and its lane.
func TestStepReportsBeginNotesAndEnd(t *testing.T) {
	var mu sync.Mutex
	var got []Event
	sink := Sink(func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() })
	boom := errors.New("boom")
	err := sink.Step("Fetch the archive", "artifacts", func(r Reporter) error {
		r.Transfer(5, 10)
		r.Note("verified")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Step returned %v, want the step's own error", err)
	}
	if len(got) != 4 || got[0].Kind != Begin || got[1].Transfer == nil || got[1].Transfer.Done != 5 || got[2].Message != "verified" || got[3].Kind != End || !errors.Is(got[3].Err, boom) {
		t.Fatalf("events: %+v", got)
	}
	for _, e := range got {
		if e.Step != "Fetch the archive" || e.Lane != "artifacts" {
			t.Errorf("event %+v does not name its step and lane", e)
		}
	}
	// A nil sink discards everything and the step still runs.
	ran := false
	if err := Sink(nil).Step("quiet", "", func(r Reporter) error { r.Note("x"); ran = true; return nil }); err != nil || !ran {
		t.Fatalf("nil sink: %v, ran %v", err, ran)
	}
}
