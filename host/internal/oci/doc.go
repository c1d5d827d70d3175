// Package oci stores and fetches Anvil plugins in ordinary OCI registries:
// references (oci://REGISTRY/REPO:TAG or @sha256:…), the artifact layout
// (media types and descriptor annotations), push, pull, tag listing and
// signature referrers. It is a thin layer over oras-go's registry client;
// it holds no cache and no policy.
//
// Invariants: a Wasm plugin is the CNCF TAG Runtime Wasm artifact (config
// application/vnd.wasm.config.v0+json with architecture wasm and os
// wasip1, exactly one layer application/wasm; the older layer type
// application/vnd.wasm.content.layer.v1+wasm is accepted on pull); a
// native process plugin is a second artifact type whose config names its
// os and arch. Everything read from a registry is bounded before it is read
// (manifest and config sizes, the module's size against the caller's cap)
// and checked against its digest (oras-go's content.ReadAll), so a
// registry can refuse to answer but cannot substitute bytes. Registry
// credentials come from the docker config and its credential helpers; plain
// HTTP is used only for loopback hosts.
package oci
