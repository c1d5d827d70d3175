package cluster

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentanvil/anvil/host/internal/judge"
)

// cacheBucket is the cluster's shared judge cache: JetStream key-value,
// keyed by the judge's own cache keys (host/internal/judge: a hash of
// the model, the request and the settings that change the reply), so a
// reply one worker paid for is a hit for every other worker and for the
// next run, as the SQLite store is locally.
const cacheBucket = "ANVIL_JUDGE_CACHE"

var cacheKeyRE = regexp.MustCompile(`^[A-Za-z0-9_=-]{1,256}$`)

// cacheWait bounds one read of the shared cache. A read the store does
// not answer (it stalled: full, or failing over) is a miss — the judge is
// called — not a wait that eats the invocation's deadline and ends the
// case as a plugin timeout.
const cacheWait = 5 * time.Second

// kvCache implements judge.Cache on the cluster's key-value bucket. Its
// failures are transport faults of the process (h).
type kvCache struct {
	kv   jetstream.KeyValue
	h    *health
	wait time.Duration // cacheWait; tests shorten it
}

var _ judge.Cache = kvCache{}

// judgeCache is the shared judge cache on c.
func (c *conn) judgeCache() kvCache { return kvCache{kv: c.cache, h: c.health, wait: cacheWait} }

func (c kvCache) GetJudge(ctx context.Context, key string) ([]byte, bool, error) {
	if !cacheKeyRE.MatchString(key) {
		return nil, false, fmt.Errorf("judge cache key %.12s… is not a key-value key", key)
	}
	rctx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	e, err := c.kv.Get(rctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		err = fmt.Errorf("read judge cache entry %.12s… from %s: %w", key, cacheBucket, err)
		if ctx.Err() == nil {
			c.h.fault("judge cache", err)
		}
		return nil, false, err
	}
	return e.Value(), true, nil
}

// PutJudge stores a reply; the model is part of the key already.
func (c kvCache) PutJudge(ctx context.Context, key, _ string, value []byte) error {
	if !cacheKeyRE.MatchString(key) {
		return fmt.Errorf("judge cache key %.12s… is not a key-value key", key)
	}
	if _, err := c.kv.Put(ctx, key, value); err != nil {
		err = fmt.Errorf("write judge cache entry %.12s… to %s (%d bytes): %w", key, cacheBucket, len(value), err)
		c.h.fault("judge cache", err)
		return err
	}
	return nil
}
