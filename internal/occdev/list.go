package occdev

import (
	"context"
	"time"

	"github.com/openclaw/occ/internal/occdev/observe"
)

// ListOptions are the settings of `occ dev list`.
type ListOptions struct {
	// Timeout bounds the whole listing (each environment's status is read at the same time);
	// 0 is observe's bound of 20 seconds.
	Timeout time.Duration

	deps deps
}

// List is `occ dev list`: observe.List, with the parts GetStatus hands in.
func List(ctx context.Context, opts ListOptions) ([]observe.Environment, error) {
	return observe.List(ctx, opts.Timeout, statusParts(opts.deps))
}
