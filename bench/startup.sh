#!/usr/bin/env bash
# Start-up harness: time from starting `anvil-host run` to the first request
# arriving at the fake judge (bench/cmd/fakejudge), for a config with a
# judge-only metric and a Wasm plugin metric (bench/startup.yaml).
#
#   bench/startup.sh        # 10 runs with a warm compile cache
#   RUNS=5 COLD=1 bench/startup.sh   # 5 runs, each with an empty compile cache
#   HOST=/path/to/anvil-host bench/startup.sh   # another build (e.g. an older commit's)
#
# Needs bin/wasm/textcheck.wasm (scripts/build-plugins textcheck). Each run
# gets a fresh fake judge (0 ms latency) and one case; the compile cache is
# its own directory under the work dir (one unmeasured run fills it unless
# COLD=1). Per run it prints the start-up (first judge request minus process
# start), the host's CPU (user+sys) for the whole run, and other_cpu_s: the
# machine's busy CPU during the run minus the host's and the fake judge's,
# i.e. what other processes took.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
RUNS="${RUNS:-10}"
COLD="${COLD:-0}"
if [ ! -f "$root/bin/wasm/textcheck.wasm" ]; then
	echo "startup.sh: needs bin/wasm/textcheck.wasm: run scripts/build-plugins textcheck" >&2
	exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/anvil-startup.XXXXXX")"
fj_pid=""
cleanup() {
	if [ -n "$fj_pid" ] && kill -0 "$fj_pid" 2>/dev/null; then
		kill "$fj_pid" 2>/dev/null || true
		wait "$fj_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

json_num() {
	local v
	v="$(grep -o "\"$2\": *[0-9.eE+-]*" "$1" | head -1 | sed 's/.*: *//')" || true
	echo "${v:-0}"
}
busy_ticks() {
	[ -r /proc/stat ] && awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat || echo 0
}
hz="$(getconf CLK_TCK 2>/dev/null || echo 100)"

echo "building anvil-host, fakejudge, measure into $work/bin ..." >&2
go build -C "$root" -o "$work/bin/" ./cmd/anvil-host ./bench/cmd/fakejudge ./bench/cmd/measure ./bench/cmd/machinecost
bin="$work/bin"
host="${HOST:-$bin/anvil-host}"
sed -e "s#@ROOT@#$root#g" "$here/startup.yaml" >"$work/anvil.yaml"
echo '{"id": "c1", "input": "Capital of France?", "actual_output": "Paris", "expected_output": "Paris"}' >"$work/cases.jsonl"

# one RUN_DIR: a run against a fresh fake judge; leaves measure.json and calls.json.
one() {
	local d=$1
	mkdir -p "$d"
	"$bin/measure" -o "$d/fakejudge-measure.json" -- \
		"$bin/fakejudge" -addr 127.0.0.1:0 -latency 0s -calls-file "$d/calls.json" >"$d/fakejudge.out" 2>"$d/fakejudge.err" &
	fj_pid=$!
	local url=""
	for _ in $(seq 200); do
		url="$(head -1 "$d/fakejudge.out" 2>/dev/null || true)"
		[ -n "$url" ] && break
		sleep 0.05
	done
	[ -n "$url" ] || { echo "startup.sh: fake judge did not start" >&2; cat "$d/fakejudge.err" >&2; exit 1; }
	local rc=0
	ANVIL_COMPILE_CACHE="$work/cache" OPENAI_BASE_URL="$url" OPENAI_API_KEY=bench-not-a-key \
		"$bin/measure" -o "$d/measure.json" -- "$host" run -c "$work/anvil.yaml" --input "$work/cases.jsonl" \
		--output-dir "$d/out" --store "$d/store.db" --cache off --no-progress >"$d/run.log" 2>&1 || rc=$?
	kill -TERM "$fj_pid"
	wait "$fj_pid" || true
	fj_pid=""
	if [ "$rc" -gt 1 ]; then
		echo "startup.sh: anvil-host run exited $rc:" >&2
		tail -20 "$d/run.log" >&2
		exit 1
	fi
}

if [ "$COLD" != 1 ]; then
	one "$work/prime"
fi
printf '%-4s %12s %10s %8s %12s\n' run startup_ms wall_s cpu_s other_cpu_s
for i in $(seq "$RUNS"); do
	[ "$COLD" = 1 ] && rm -rf "$work/cache"
	d="$work/r$i"
	b0="$(busy_ticks)"
	one "$d"
	b1="$(busy_ticks)"
	start="$(json_num "$d/measure.json" start_unix_ns)"
	first="$(json_num "$d/calls.json" first_request_unix_ns)"
	cpu="$(json_num "$d/measure.json" cpu_s)"
	wall="$(json_num "$d/measure.json" wall_s)"
	fjcpu="$(json_num "$d/fakejudge-measure.json" cpu_s)"
	other="$(awk -v a="$b0" -v b="$b1" -v hz="$hz" -v c="$cpu" -v f="$fjcpu" 'BEGIN { o = (b - a) / hz - c - f; print (o < 0 ? 0 : o) }')"
	ms="$(awk -v s="$start" -v f="$first" 'BEGIN { if (f == 0) print "none"; else printf "%.1f", (f - s) / 1e6 }')"
	printf '%-4s %12s %10.3f %8.3f %12.2f\n' "$i" "$ms" "$wall" "$cpu" "$other"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
"$work/bin/machinecost" -dir "$work"
