package oci

import (
	"fmt"
	"net"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
)

// Scheme prefixes every plugin reference.
const Scheme = "oci://"

// Ref is a parsed oci:// reference: a repository and either a tag or a
// manifest digest (or both, written REPO:TAG@sha256:…).
type Ref struct {
	Registry   string // host[:port]
	Repository string
	Tag        string
	Digest     string // "sha256:<hex>", "" when the reference is a tag
}

// ParseRef parses oci://REGISTRY/REPO[:TAG][@sha256:HEX]. requireTarget
// makes a bare repository (no tag, no digest) an error.
func ParseRef(s string, requireTarget bool) (Ref, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Ref{}, fmt.Errorf("reference %q: want oci://REGISTRY/REPO:TAG or oci://REGISTRY/REPO@sha256:…", s)
	}
	var r Ref
	if i := strings.Index(rest, "@"); i >= 0 {
		r.Digest = rest[i+1:]
		rest = rest[:i]
		if _, err := digest.Parse(r.Digest); err != nil || !strings.HasPrefix(r.Digest, "sha256:") {
			return Ref{}, fmt.Errorf("reference %q: digest %q is not sha256:<64 hex digits>", s, r.Digest)
		}
	}
	slash := strings.Index(rest, "/")
	if slash <= 0 {
		return Ref{}, fmt.Errorf("reference %q: no repository after the registry", s)
	}
	if c := strings.LastIndex(rest, ":"); c > slash {
		r.Tag = rest[c+1:]
		rest = rest[:c]
	}
	r.Registry, r.Repository = rest[:slash], rest[slash+1:]
	probe := registry.Reference{Registry: r.Registry, Repository: r.Repository, Reference: r.Tag}
	if r.Tag == "" {
		probe.Reference = r.Digest
	}
	if err := probe.Validate(); err != nil {
		return Ref{}, fmt.Errorf("reference %q: %w", s, err)
	}
	if requireTarget && r.Tag == "" && r.Digest == "" {
		return Ref{}, fmt.Errorf("reference %q: name a tag (:TAG) or a digest (@sha256:…)", s)
	}
	return r, nil
}

// String is the reference as written: oci://REGISTRY/REPO[:TAG][@DIGEST].
func (r Ref) String() string {
	s := Scheme + r.Registry + "/" + r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Target is what the registry resolves: the digest when there is one (it
// cannot move), else the tag.
func (r Ref) Target() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// WithDigest is r pinned to d.
func (r Ref) WithDigest(d string) Ref { r.Digest = d; return r }

// IsLoopback reports whether the registry host is this machine, the only
// case where plain HTTP is used.
func (r Ref) IsLoopback() bool {
	host := r.Registry
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ParseRegistry reads oci://REGISTRY (a host, with a port if any): the
// registry a search lists. The returned Ref has no repository.
func ParseRegistry(s string) (Ref, error) {
	host, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		host = s
	}
	host = strings.TrimSuffix(host, "/")
	probe := registry.Reference{Registry: host, Repository: "probe"}
	if host == "" || strings.ContainsAny(host, "/@") || probe.Validate() != nil {
		return Ref{}, fmt.Errorf("registry %q: want oci://HOST[:PORT]", s)
	}
	return Ref{Registry: host}, nil
}
