package cluster

import (
	"context"
	"errors"
	"fmt"
	"regexp"

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

// kvCache implements judge.Cache on the cluster's key-value bucket.
type kvCache struct {
	kv jetstream.KeyValue
}

var _ judge.Cache = kvCache{}

func (c kvCache) GetJudge(ctx context.Context, key string) ([]byte, bool, error) {
	if !cacheKeyRE.MatchString(key) {
		return nil, false, fmt.Errorf("judge cache key %.12s… is not a key-value key", key)
	}
	e, err := c.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read judge cache entry %.12s… from %s: %w", key, cacheBucket, err)
	}
	return e.Value(), true, nil
}

// PutJudge stores a reply; the model is part of the key already.
func (c kvCache) PutJudge(ctx context.Context, key, _ string, value []byte) error {
	if !cacheKeyRE.MatchString(key) {
		return fmt.Errorf("judge cache key %.12s… is not a key-value key", key)
	}
	if _, err := c.kv.Put(ctx, key, value); err != nil {
		return fmt.Errorf("write judge cache entry %.12s… to %s (%d bytes): %w", key, cacheBucket, len(value), err)
	}
	return nil
}
