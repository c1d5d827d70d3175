package oci

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/agentanvil/anvil/host/internal/stall"
)

// Client opens repositories with the operator's registry credentials.
type Client struct {
	// Credentials answers for a registry host; nil means anonymous.
	Credentials credentials.Store
	// HTTP is the transport; oras's retrying client when nil. Either way
	// each exchange is bounded by StallAfter.
	HTTP *http.Client
	// StallAfter gives up an exchange with the registry that has moved no
	// byte for this long; DefaultStallAfter when zero. A registry that
	// stops answering fails the pull with an error naming the plugin,
	// instead of hanging the run; a large blob on a slow link, still
	// moving, is never cut.
	StallAfter time.Duration
	// UserAgent names Anvil to the registry.
	UserAgent string
	// Logger receives what was tolerated rather than failed; nil
	// discards it.
	Logger *slog.Logger
}

func (c *Client) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// NewClient reads credentials as docker and oras do: $DOCKER_CONFIG or
// ~/.docker/config.json, with the credential helpers it names.
func NewClient() (*Client, error) {
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("registry credentials (docker config): %w", err)
	}
	return &Client{Credentials: store, UserAgent: "anvil-host"}, nil
}

// Repository opens the repository of r. Plain HTTP only for loopback.
func (c *Client) Repository(r Ref) (*remote.Repository, error) {
	repo, err := remote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	repo.PlainHTTP = r.IsLoopback()
	repo.Client = c.authClient()
	return repo, nil
}

// DefaultStallAfter is a Client's StallAfter when it sets none.
const DefaultStallAfter = time.Minute

func (c *Client) authClient() *auth.Client {
	idle := c.StallAfter
	if idle <= 0 {
		idle = DefaultStallAfter
	}
	var hc *http.Client
	if c.HTTP == nil {
		// Inside the retries: each attempt is guarded on its own.
		hc = &http.Client{Transport: retry.NewTransport(&stall.Transport{Idle: idle})}
	} else {
		copied := *c.HTTP
		copied.Transport = &stall.Transport{Base: c.HTTP.Transport, Idle: idle}
		hc = &copied
	}
	ac := &auth.Client{Client: hc, Cache: auth.NewCache()}
	if c.Credentials != nil {
		ac.Credential = credentials.Credential(c.Credentials)
	}
	if c.UserAgent != "" {
		ac.SetUserAgent(c.UserAgent)
	}
	return ac
}

// maxRepositories bounds what Repositories lists of one registry.
const maxRepositories = 10000

// Repositories lists the repositories of the registry r names (its
// catalog; registries that do not serve one, as many hosted ones, say so
// in the error), at most maxRepositories.
func (c *Client) Repositories(ctx context.Context, r Ref) ([]string, error) {
	reg, err := remote.NewRegistry(r.Registry)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Registry, err)
	}
	reg.PlainHTTP = r.IsLoopback()
	reg.Client = c.authClient()
	var out []string
	err = reg.Repositories(ctx, "", func(repos []string) error {
		out = append(out, repos...)
		if len(out) > maxRepositories {
			return errTooMany
		}
		return nil
	})
	if errors.Is(err, errTooMany) {
		return out[:maxRepositories], nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the repositories of %s (its catalog): %w", r.Registry, err)
	}
	return out, nil
}
