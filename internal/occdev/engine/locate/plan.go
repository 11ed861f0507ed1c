package locate

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PlanLookup bounds locating the engine while planning: each place is asked its version once.
const PlanLookup = 30 * time.Second

// Planned is the engine a plan of `occ dev up` uses: the located engine, or, when the automatic
// choice found no usable engine anywhere, Docker's place unidentified (only Endpoint and Source
// set) with NotFound, the search that found nothing. A dry run then still shows the whole plan,
// and the preflight says what to start there unless an engine answers at Docker's place by then.
type Planned struct {
	Location
	NotFound *NotFoundError
}

// ForPlan locates and identifies the engine value (a Choice as the user gave it) names, under
// parent (nil: a plain lookup) and within PlanLookup. setting names where value came from, for
// messages; empty means --engine. A bad value, an explicit choice that finds nothing, or an
// interrupted lookup is an error.
func ForPlan(parent context.Context, value, setting string, env Env) (Planned, error) {
	if setting == "" {
		setting = "--engine"
	}
	choice, err := ParseChoice(value, setting)
	if err != nil {
		return Planned{}, err
	}
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, PlanLookup)
	defer cancel()
	loc, err := Find(ctx, Options{Choice: choice, ChoiceSource: setting, Env: env})
	if err != nil && parent.Err() != nil {
		return Planned{}, fmt.Errorf("interrupted while locating the container engine (%w)", parent.Err())
	}
	var notFound *NotFoundError
	switch {
	case err == nil:
		return Planned{Location: loc}, nil
	case choice == Auto && errors.As(err, &notFound):
		ep, source, lerr := DockerPlace(env)
		if lerr != nil {
			return Planned{}, lerr
		}
		return Planned{Location: Location{Endpoint: ep, Source: source}, NotFound: notFound}, nil
	}
	return Planned{}, err
}
