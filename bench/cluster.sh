#!/usr/bin/env bash
# bench/cluster.sh: cluster mode (`run --cluster` + `anvil-host worker`)
# with 1, 2 and 4 worker processes on this machine, against a local run.
#
#   bench/cluster.sh                       # both workloads
#   N_JUDGE=2000 N_CPU=400 bench/cluster.sh
#   N_JUDGE=0 WORKER_CONCURRENCY=1 bench/cluster.sh   # CPU-bound scaling, one core per worker
#
# Two workloads:
#   judge-bound  one criteria-only G-Eval metric; the fake judge answers
#                after LATENCY (default 100ms); the judge's max_concurrency
#                is 32 for the whole cluster (one budget). Bound =
#                ceil(calls / 32) × LATENCY: the best any number of
#                processes can do.
#   cpu-bound    the spin Wasm metric (bench/plugins/spin): SHA-256 of each
#                case ROUNDS times, no judge. Scales with cores, not workers.
#
# Needs nats-server (scripts/ci-deps-nats). Every process gets its own
# wazero compile cache, warmed by a first run, so compile time is not
# measured. Prints one row per run: wall, the coordinator's and the
# workers' CPU, and other_cpu_s — CPU the rest of the machine (the fake
# judge, nats-server, other users) used meanwhile; when it is large the
# machine was busy and wall is skewed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
N_JUDGE="${N_JUDGE:-1000}"
N_CPU="${N_CPU:-300}"
LATENCY="${LATENCY:-100ms}"
ROUNDS="${ROUNDS:-200000}"
WORKERS="${WORKERS:-1 2 4}"
# Cases each worker evaluates at once (worker --concurrency); empty = the
# worker's default (its cores). 1 shows scaling with worker processes up to
# the cores available: one core per worker.
WORKER_CONCURRENCY="${WORKER_CONCURRENCY:-}"

work="$(mktemp -d "${TMPDIR:-/tmp}/anvil-cluster-bench.XXXXXX")"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bin="$work/bin"
mkdir -p "$bin"
go build -C "$root" -o "$bin/" ./cmd/anvil-host ./bench/cmd/fakejudge ./bench/cmd/gencases ./bench/cmd/measure
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -C "$root" -trimpath -buildmode=c-shared -o "$bin/spin.wasm" ./bench/plugins/spin/wasm
echo "sha256:$(sha256sum "$bin/spin.wasm" | cut -d' ' -f1)" >"$bin/spin.wasm.sha256"

nats-server -a 127.0.0.1 -p -1 -js -sd "$work/js" -l "$work/nats.log" &
pids+=($!)
port=""
for _ in $(seq 200); do
	port=$(grep -o 'Listening for client connections on 127.0.0.1:[0-9]*' "$work/nats.log" 2>/dev/null | head -1 | sed 's/.*://') || true
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { echo "cluster.sh: nats-server did not start" >&2; exit 1; }
nats="nats://127.0.0.1:$port"

"$bin/fakejudge" -addr 127.0.0.1:0 -latency "$LATENCY" -alts 1 >"$work/judge.url" &
pids+=($!)
timeout 60 bash -c "until [ -s '$work/judge.url' ]; do sleep 0.05; done"
export OPENAI_BASE_URL="$(head -n1 "$work/judge.url")" OPENAI_API_KEY=bench-not-a-key

cat >"$work/judge.yaml" <<YAML
version: 1
judges:
  bench: {model: bench-judge, api_key_env: OPENAI_API_KEY, max_concurrency: 32, supports_logprobs: true, supports_json_schema: true}
defaults: {judge: bench}
metrics:
  - name: correctness
    kind: geval
    gate: false
    params:
      criteria: Judge whether the actual output answers the input correctly, agreeing with the expected output.
      evaluation_params: [input, actual_output, expected_output]
YAML
cat >"$work/cpu.yaml" <<YAML
version: 1
plugins:
  spin: {path: $bin/spin.wasm, sha256_file: $bin/spin.wasm.sha256, limits: {timeout: 120s}}
metrics:
  - name: spin
    kind: spin
    gate: false
    params: {rounds: $ROUNDS}
YAML
[ "$N_JUDGE" -gt 0 ] && "$bin/gencases" -n "$N_JUDGE" -o "$work/judge-cases.jsonl"
"$bin/gencases" -n "$N_CPU" -o "$work/cpu-cases.jsonl"

busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
hz="$(getconf CLK_TCK)"
num() { grep -o "\"$2\": *[0-9.eE+-]*" "$1" | head -1 | sed 's/.*: *//'; }

# one LABEL CONFIG CASES WORKERS [run flags…]: WORKERS 0 is a local run.
one() {
	local label=$1 cfg=$2 cases=$3 w=$4
	shift 4
	local d="$work/$label-w$w" wp=() i
	mkdir -p "$d"
	for ((i = 1; i <= w; i++)); do
		ANVIL_COMPILE_CACHE="$work/cache/w$i" "$bin/measure" -o "$d/worker$i.json" -- \
			"$bin/anvil-host" worker --cluster "$nats" --name "w$i" --log-level warn ${WORKER_CONCURRENCY:+--concurrency "$WORKER_CONCURRENCY"} 2>"$d/worker$i.log" &
		wp+=($!)
	done
	local flags=()
	[ "$w" -gt 0 ] && flags=(--cluster "$nats")
	local b0 b1
	b0=$(busy_ticks)
	ANVIL_COMPILE_CACHE="$work/cache/coord" "$bin/measure" -o "$d/coord.json" -- \
		"$bin/anvil-host" run -c "$cfg" --input "$cases" -o "$d/out" --cache off --no-progress "${flags[@]}" "$@" >"$d/run.log" 2>&1 || true
	b1=$(busy_ticks)
	for p in "${wp[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${wp[@]}"; do wait "$p" 2>/dev/null || true; done
	local n wall coord workers=0 f
	n=$(wc -l <"$d/out/results.jsonl")
	wall=$(num "$d/coord.json" wall_s)
	coord=$(num "$d/coord.json" cpu_s)
	for f in "$d"/worker*.json; do
		[ -e "$f" ] && workers=$(awk -v a="$workers" -v b="$(num "$f" cpu_s)" 'BEGIN { print a + b }')
	done
	awk -v l="$label" -v w="$w" -v n="$n" -v wall="$wall" -v c="$coord" -v k="$workers" \
		-v busy="$(( b1 - b0 ))" -v hz="$hz" -v bound="${BOUND:-0}" 'BEGIN {
		other = busy / hz - c - k; if (other < 0) other = 0
		printf "%-12s workers=%d cases=%d wall_s=%.2f coord_cpu_s=%.2f workers_cpu_s=%.2f other_cpu_s=%.2f", l, w, n, wall, c, k, other
		if (bound > 0) printf " bound_s=%.2f wall/bound=%.2f", bound, wall / bound
		printf "\n" }'
}

lat_s=$(echo "$LATENCY" | awk '/ms$/ { sub(/ms$/, ""); print $0 / 1000; next } { sub(/s$/, ""); print $0 + 0 }')
export BOUND=$(awk -v n="$N_JUDGE" -v l="$lat_s" 'BEGIN { print (int((n + 31) / 32) + 1) * l }')
echo "# commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# judge-bound: $N_JUDGE cases, latency $LATENCY, max_concurrency 32 for the cluster"
if [ "$N_JUDGE" -gt 0 ]; then
	one judge "$work/judge.yaml" "$work/judge-cases.jsonl" 0 --concurrency 64
	for w in $WORKERS; do
		one judge "$work/judge.yaml" "$work/judge-cases.jsonl" "$w"
	done
fi
unset BOUND
echo "# cpu-bound: $N_CPU cases, spin $ROUNDS SHA-256 rounds each (warm-up run first: compile caches)"
"$bin/gencases" -n 8 -o "$work/warm.jsonl"
one warmup "$work/cpu.yaml" "$work/warm.jsonl" 4 >/dev/null
one cpu "$work/cpu.yaml" "$work/cpu-cases.jsonl" 0 --concurrency "${WORKER_CONCURRENCY:-2}"
for w in $WORKERS; do
	one cpu "$work/cpu.yaml" "$work/cpu-cases.jsonl" "$w"
done
