package step

import "testing"

// A dry run of a flow with a group lists every step with its description, and counts the lanes'
// steps instead of the group: the printed "would run N steps" matches what a run reports.
func TestPlanOfDescribesEveryStepAndCountsLanes(t *testing.T) {
	describe := func(p string) Description { return Creates("a thing for " + p) }
	steps := []Step[string, int]{
		{Name: "first", Describe: describe},
		Concurrently("group",
			InLane("one", Step[string, int]{Name: "one.1", Describe: describe}, Step[string, int]{Name: "one.2"}),
			InLane("two", Step[string, int]{Name: "two.1", Describe: describe}),
		),
	}
	planned := PlanOf("plan", steps)
	if len(planned) != 2 || planned[0].Creates[0] != "a thing for plan" || len(planned[1].Lanes) != 2 {
		t.Fatalf("planned = %+v", planned)
	}
	if undescribed := planned[1].Lanes[0].Steps[1]; undescribed.Creates == nil || len(undescribed.Creates) != 0 {
		t.Errorf("a step without Describe: %+v, want an empty (not null) Creates", undescribed)
	}
	if n := Count(planned); n != 4 {
		t.Errorf("Count = %d, want 4 (the group counts as its lanes' steps)", n)
	}
}
