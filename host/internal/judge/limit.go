package judge

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pacer keeps a judge under its requests-per-minute and tokens-per-minute
// limits. Waiting is done on the judge's Clock, so tests see the waits
// instead of sleeping through them.
type pacer struct {
	requests *rate.Limiter // nil: unlimited
	tokens   *rate.Limiter // nil: unlimited
}

func newPacer(cfg Config) *pacer {
	p := &pacer{}
	if cfg.RequestsPerMinute > 0 {
		// A burst of max_concurrency lets a run start at full width and
		// then settle to the configured pace.
		burst := max(1, min(cfg.RequestsPerMinute, cfg.MaxConcurrency))
		p.requests = rate.NewLimiter(rate.Limit(float64(cfg.RequestsPerMinute)/60), burst)
	}
	if cfg.TokensPerMinute > 0 {
		p.tokens = rate.NewLimiter(rate.Limit(float64(cfg.TokensPerMinute)/60), cfg.TokensPerMinute)
	}
	return p
}

// wait blocks until one request estimated at tokens may start.
func (p *pacer) wait(ctx context.Context, clock Clock, tokens int) error {
	if p.requests == nil && p.tokens == nil {
		return ctx.Err()
	}
	now := clock.Now()
	var delay time.Duration
	var reservations []*rate.Reservation
	if p.requests != nil {
		r := p.requests.ReserveN(now, 1)
		reservations = append(reservations, r)
		delay = max(delay, r.DelayFrom(now))
	}
	if p.tokens != nil {
		// A single request larger than a minute's allowance can never fit;
		// it waits for a full bucket instead of failing.
		n := max(1, min(tokens, p.tokens.Burst()))
		r := p.tokens.ReserveN(now, n)
		reservations = append(reservations, r)
		delay = max(delay, r.DelayFrom(now))
	}
	if delay <= 0 {
		return nil
	}
	if err := clock.Sleep(ctx, delay); err != nil {
		// Give the unused allowance back to the others.
		for _, r := range reservations {
			r.CancelAt(clock.Now())
		}
		return err
	}
	return nil
}

// slots bounds a judge's in-flight HTTP requests.
type slots chan struct{}

func (s slots) acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s slots) release() { <-s }

// NewLimiter is a judge's own pacing as a Limiter: cfg's
// requests_per_minute, tokens_per_minute and max_concurrency, exactly as
// a judge applies them to its calls. A cluster coordinator serves one per
// judge to all its workers.
func NewLimiter(cfg Config) Limiter {
	cfg = cfg.WithDefaults()
	return &ownLimiter{pacer: newPacer(cfg), slots: make(slots, cfg.MaxConcurrency)}
}

type ownLimiter struct {
	pacer *pacer
	slots slots
}

func (l *ownLimiter) Acquire(ctx context.Context, tokens int) (func(), error) {
	if err := l.pacer.wait(ctx, realClock{}, tokens); err != nil {
		return nil, err
	}
	if err := l.slots.acquire(ctx); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(l.slots.release) }, nil
}
