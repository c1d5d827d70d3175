#!/usr/bin/env bash
# Judge cascade against its strong judge alone, on scripted fake judges
# (bench/cmd/cascadebench: what the judges answer, and why the figures
# measure the mechanism rather than a real model).
#
#   bench/cascade.sh                      # 1000 cases, 1% confidently wrong, band [0.15, 0.85]
#   bench/cascade.sh -n 5000 -wrong 0.03 -band "0.1, 0.9"
#
# Prints per run (strong-only, cascade): verified cases, USD, USD per
# verified case, the share of cases that reached the strong judge and the
# share of verdicts that differ from the strong-only run.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
bin="$(mktemp -d "${TMPDIR:-/tmp}/anvil-cascade-bin.XXXXXX")"
trap 'rm -rf "$bin"' EXIT
go build -C "$root" -o "$bin/" ./cmd/anvil-host ./bench/cmd/cascadebench
"$bin/cascadebench" -host "$bin/anvil-host" "$@"
