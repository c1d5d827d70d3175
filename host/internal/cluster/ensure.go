package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Every process of a cluster makes sure the streams and buckets exist when
// it connects, and workers are started together, so the creations race.
// The loser of a race is told "stream name already in use" or, by
// nats-server before 2.10, "subjects overlap with an existing stream"
// (10065): both mean another process has just created it, and it is read
// again. jetstream's CreateOrUpdate* is not used: it sends an update
// first, and an update racing the stream's creation crashed nats-server
// 2.9 (nil dereference in stream.updateWithAdvisory), so a stream that
// exists is updated only when its configuration is not this host's.

// ensureAttempts bounds how often one stream is read and created: a race
// resolves on the next read, so only a lasting conflict (another
// application's stream on the same subjects) exhausts it.
const ensureAttempts = 8

// errSubjectsOverlap is JetStream's "subjects overlap with an existing
// stream"; nats.go has no constant for it.
const errSubjectsOverlap jetstream.ErrorCode = 10065

// lostCreateRace reports whether err is a create that failed because
// another process created the same stream or bucket first.
func lostCreateRace(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) || errors.Is(err, jetstream.ErrBucketExists) ||
		(errors.As(err, &apiErr) && apiErr.ErrorCode == errSubjectsOverlap)
}

// ensure runs get until it finds the thing; when it is missing (notFound),
// create, and after a lost race get again. what names it in errors.
func ensure[T any](ctx context.Context, what string, notFound error, get, create func(context.Context) (T, error)) (T, error) {
	var zero T
	var err error
	for attempt := range ensureAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return zero, fmt.Errorf("%s: %w", what, ctx.Err())
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			}
		}
		var v T
		if v, err = get(ctx); err == nil {
			return v, nil
		}
		if !errors.Is(err, notFound) {
			return zero, fmt.Errorf("%s: %w", what, jetStreamHint(err))
		}
		if v, err = create(ctx); err == nil {
			return v, nil
		}
		if !lostCreateRace(err) {
			return zero, fmt.Errorf("%s: %w", what, jetStreamHint(err))
		}
	}
	return zero, fmt.Errorf("%s: still conflicting after %d attempts (another stream on the server uses its subjects?): %w", what, ensureAttempts, err)
}

// jetStreamHint adds how to enable JetStream to the one error that means
// it is off, and to no other.
func jetStreamHint(err error) error {
	// No responder on a JetStream API subject: nothing serves it.
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return fmt.Errorf("%w (start nats-server with -js, or enable JetStream for this account)", err)
	}
	return err
}

// ensureStream makes sure stream cfg.Name exists with cfg's settings.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	s, err := ensure(ctx, "JetStream stream "+cfg.Name, jetstream.ErrStreamNotFound,
		func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, cfg.Name) },
		func(ctx context.Context) (jetstream.Stream, error) { return js.CreateStream(ctx, cfg) })
	if err != nil {
		return err
	}
	if sameStreamConfig(s.CachedInfo().Config, cfg) {
		return nil
	}
	// Created by another version of this host, or by hand: bring what
	// this host sets to its values, keeping the replicas chosen.
	cfg.Replicas = s.CachedInfo().Config.Replicas
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("JetStream stream %s: update: %w", cfg.Name, err)
	}
	return nil
}

// sameStreamConfig compares what this host sets of a stream's
// configuration (the server fills the rest in: a duplicate window left
// unset is the server's default, not a difference).
func sameStreamConfig(have, want jetstream.StreamConfig) bool {
	a, b := slices.Clone(have.Subjects), slices.Clone(want.Subjects)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b) && have.Retention == want.Retention && have.Storage == want.Storage &&
		(want.Duplicates == 0 || have.Duplicates == want.Duplicates) && have.MaxAge == want.MaxAge
}

// ensureKeyValue makes sure key-value bucket cfg.Bucket exists.
func ensureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return ensure(ctx, "JetStream key-value bucket "+cfg.Bucket, jetstream.ErrBucketNotFound,
		func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, cfg.Bucket) },
		func(ctx context.Context) (jetstream.KeyValue, error) { return js.CreateKeyValue(ctx, cfg) })
}

// ensureObjectStore makes sure object store cfg.Bucket exists.
func ensureObjectStore(ctx context.Context, js jetstream.JetStream, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	return ensure(ctx, "JetStream object store "+cfg.Bucket, jetstream.ErrBucketNotFound,
		func(ctx context.Context) (jetstream.ObjectStore, error) { return js.ObjectStore(ctx, cfg.Bucket) },
		func(ctx context.Context) (jetstream.ObjectStore, error) { return js.CreateObjectStore(ctx, cfg) })
}
