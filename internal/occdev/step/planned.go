package step

// Planned is one step of a dry run: what it would create, or the lanes it would run side by
// side. It is the Step tree with each Describe called, so the dry run lists exactly the steps a
// run would take, in their order and lanes.
type Planned struct {
	Name string `json:"name"`
	Description
	Lanes []PlannedLane `json:"lanes,omitempty"`
}

// PlannedLane is one lane of a planned group step.
type PlannedLane struct {
	Name  string    `json:"name"`
	Steps []Planned `json:"steps"`
}

// PlanOf describes steps from p, lanes and all, without running anything: Describe performs no
// I/O. A step without a Describe creates nothing.
func PlanOf[P, R any](p P, steps []Step[P, R]) []Planned {
	out := make([]Planned, 0, len(steps))
	for _, s := range steps {
		ps := Planned{Name: s.Name, Description: Description{Creates: []string{}}}
		if s.Describe != nil {
			ps.Description = s.Describe(p)
		}
		for _, l := range s.Lanes {
			ps.Lanes = append(ps.Lanes, PlannedLane{Name: l.Name, Steps: PlanOf(p, l.Steps)})
		}
		out = append(out, ps)
	}
	return out
}

// Count is the number of planned steps that do work: a group counts as its lanes' steps.
func Count(steps []Planned) int {
	n := 0
	for _, s := range steps {
		if len(s.Lanes) == 0 {
			n++
			continue
		}
		for _, l := range s.Lanes {
			n += Count(l.Steps)
		}
	}
	return n
}
