#!/usr/bin/env bash
# Load harness: anvil-host against a fake judge with a fixed latency.
#
#   bench/run.sh            # N = 200 and 2000
#   bench/run.sh 200 5000   # other dataset sizes
#
# Environment knobs (defaults in brackets):
#   LATENCY [100ms]          fake judge's fixed per-reply latency (Go duration)
#   CONCURRENCY [8]          anvil-host run --concurrency (cases in flight)
#   JUDGE_CONCURRENCY [8]    the judge's max_concurrency (in-flight HTTP calls)
#   ALTS [20]                alternatives per token in the fake judge's logprobs
#   CONFIG [judge]           judge: bench/anvil.yaml (one G-Eval metric);
#                            wasm: bench/wasm.yaml (one Wasm exact_match metric,
#                            no judge calls; needs `scripts/build-plugins textcheck`)
#   KEEP [0]                 1 keeps the work dir (cases, results, logs)
#   PROFILE [0]              1 runs host/internal/cmd/profilehost (the same engine
#                            calls as `anvil-host run`) instead, writing CPU,
#                            allocation, mutex and block profiles to the work
#                            dir (implies KEEP=1); read them with
#                            `go tool pprof -top <work>/bin/profilehost <work>/nN/cpu.pprof`.
#                            cpu writes the CPU and allocation profiles only:
#                            the mutex and block profilers add CPU of their own
#
# For each N it starts a fresh fake judge, generates N cases, runs
# `anvil-host run --cache off` into a fresh output dir under bench/cmd/measure
# (wall time, user+sys CPU, peak RSS), reads the number of judge calls from the
# fake judge, and prints one table row (peak RSS also split into its sampled
# anonymous and file parts); above the table, one line of what
# the machine charges (bench/cmd/machinecost). See bench/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

sizes=("$@")
if [ ${#sizes[@]} -eq 0 ]; then
	sizes=(200 2000)
fi
LATENCY="${LATENCY:-100ms}"
CONCURRENCY="${CONCURRENCY:-8}"
JUDGE_CONCURRENCY="${JUDGE_CONCURRENCY:-8}"
ALTS="${ALTS:-20}"
KEEP="${KEEP:-0}"
PROFILE="${PROFILE:-0}"
CONFIG="${CONFIG:-judge}"
case "$CONFIG" in
judge) config_src="$here/anvil.yaml" ;;
wasm)
	config_src="$here/wasm.yaml"
	if [ ! -f "$root/bin/wasm/textcheck.wasm" ]; then
		echo "run.sh: CONFIG=wasm needs bin/wasm/textcheck.wasm: run scripts/build-plugins textcheck" >&2
		exit 2
	fi
	;;
*)
	echo "run.sh: CONFIG=$CONFIG: use judge or wasm" >&2
	exit 2
	;;
esac
case "$PROFILE" in
0) ;;
1 | cpu) KEEP=1 ;;
*)
	echo "run.sh: PROFILE=$PROFILE: use 0, 1 or cpu" >&2
	exit 2
	;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/anvil-bench.XXXXXX")"
fj_pid=""
cleanup() {
	if [ -n "$fj_pid" ] && kill -0 "$fj_pid" 2>/dev/null; then
		kill "$fj_pid" 2>/dev/null || true
		wait "$fj_pid" 2>/dev/null || true
	fi
	if [ "$KEEP" = 1 ]; then
		echo "work dir kept: $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# json_num FILE KEY: the number after "KEY": in a small JSON file (0 if absent).
json_num() {
	local v
	v="$(grep -o "\"$2\": *[0-9.eE+-]*" "$1" | head -1 | sed 's/.*: *//')" || true
	echo "${v:-0}"
}

echo "building anvil-host, fakejudge, gencases, measure into $work/bin ..." >&2
mkdir -p "$work/bin"
go build -C "$root" -o "$work/bin/" ./cmd/anvil-host ./bench/cmd/fakejudge ./bench/cmd/gencases ./bench/cmd/measure ./bench/cmd/machinecost ./host/internal/cmd/profilehost
bin="$work/bin"
# What this machine charges for system calls, files, loopback TCP and Go
# code, measured where the run writes its files and before it starts, so
# the table can be read against the machine (VMs differ from day to day).
machine="$("$bin/machinecost" -dir "$work")"

# The config template, with the judge's max_concurrency set (judge) or the
# plugin's path made absolute (wasm).
sed -e "s/^\(    max_concurrency:\) [0-9]*/\1 $JUDGE_CONCURRENCY/" -e "s#@ROOT@#$root#g" "$config_src" >"$work/anvil.yaml"
if [ "$CONFIG" = judge ] && ! grep -q "max_concurrency: $JUDGE_CONCURRENCY\$" "$work/anvil.yaml"; then
	echo "run.sh: could not set max_concurrency in the config" >&2
	exit 2
fi

# latency in seconds (awk-friendly), from a Go duration like 100ms, 0.25s, 1s.
lat_s="$(echo "$LATENCY" | awk '
	/ms$/ { sub(/ms$/, ""); print $0 / 1000; next }
	/us$/ { sub(/us$/, ""); print $0 / 1e6; next }
	/s$/  { sub(/s$/, "");  print $0 + 0; next }
	{ print "bad"; }')"
if [ "$lat_s" = bad ]; then
	echo "run.sh: LATENCY=$LATENCY: use ms, us or s (e.g. 100ms)" >&2
	exit 2
fi
eff_conc=$((CONCURRENCY < JUDGE_CONCURRENCY ? CONCURRENCY : JUDGE_CONCURRENCY))

# busy_ticks: the machine's busy CPU time so far, in clock ticks (Linux
# /proc/stat; empty elsewhere). Compared with the host's and the fake judge's
# own CPU it shows other load on the machine during a run, which skews wall.
busy_ticks() {
	[ -r /proc/stat ] && awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat || true
}
hz="$(getconf CLK_TCK 2>/dev/null || echo 100)"

rows=()
for n in "${sizes[@]}"; do
	d="$work/n$n"
	mkdir -p "$d"

	# A fresh fake judge per run, so its call count is this run's.
	# (under measure too: its CPU shares the machine's cores with the host)
	"$bin/measure" -o "$d/fakejudge-measure.json" -- \
		"$bin/fakejudge" -addr 127.0.0.1:0 -latency "$LATENCY" -alts "$ALTS" -calls-file "$d/calls.json" \
		>"$d/fakejudge.out" 2>"$d/fakejudge.err" &
	fj_pid=$!
	url=""
	for _ in $(seq 100); do
		url="$(head -1 "$d/fakejudge.out" 2>/dev/null || true)"
		[ -n "$url" ] && break
		sleep 0.05
	done
	if [ -z "$url" ]; then
		echo "run.sh: fake judge did not start:" >&2
		cat "$d/fakejudge.err" >&2
		exit 1
	fi

	"$bin/gencases" -n "$n" -o "$d/cases.jsonl"

	echo "N=$n: anvil-host run (latency $LATENCY, --concurrency $CONCURRENCY, judge max_concurrency $JUDGE_CONCURRENCY, --cache off) ..." >&2
	if [ "$PROFILE" != 0 ]; then
		host=("$bin/profilehost" -c "$work/anvil.yaml" -input "$d/cases.jsonl" -o "$d/out"
			-store "$d/store.db" -concurrency "$CONCURRENCY" -cache off
			-cpuprofile "$d/cpu.pprof" -memprofile "$d/mem.pprof")
		if [ "$PROFILE" = 1 ]; then
			host+=(-mutexprofile "$d/mutex.pprof" -blockprofile "$d/block.pprof")
		fi
	else
		host=("$bin/anvil-host" run -c "$work/anvil.yaml" --input "$d/cases.jsonl" --output-dir "$d/out"
			--store "$d/store.db" --concurrency "$CONCURRENCY" --cache off --no-progress)
	fi
	rc=0
	busy0="$(busy_ticks)"
	OPENAI_BASE_URL="$url" OPENAI_API_KEY=bench-not-a-key \
		"$bin/measure" -o "$d/measure.json" -- "${host[@]}" >"$d/run.log" 2>&1 &
	host_pid=$!
	# Watch the fake judge: if it goes away mid-run, every call would fail
	# and be retried; stop the host instead of measuring that.
	while kill -0 "$host_pid" 2>/dev/null; do
		if ! kill -0 "$fj_pid" 2>/dev/null; then
			echo "run.sh: N=$n: the fake judge exited during the run (killed from outside?); stopping anvil-host" >&2
			kill -TERM "$host_pid" 2>/dev/null || true
			wait "$host_pid" || true
			exit 1
		fi
		sleep 0.25
	done
	wait "$host_pid" || rc=$?
	busy1="$(busy_ticks)"
	# 0: passed; 1: a gated metric failed its threshold (the metric is not
	# gated here, but a failing score is not a harness failure). Else: error.
	if [ "$rc" -gt 1 ]; then
		echo "run.sh: anvil-host run exited $rc:" >&2
		tail -40 "$d/run.log" >&2
		exit 1
	fi

	kill -TERM "$fj_pid"
	wait "$fj_pid" || true
	fj_pid=""

	calls="$(json_num "$d/calls.json" calls)"
	steps="$(json_num "$d/calls.json" steps)"
	wall="$(json_num "$d/measure.json" wall_s)"
	cpu="$(json_num "$d/measure.json" cpu_s)"
	rss="$(json_num "$d/measure.json" max_rss_kib)"
	anon="$(json_num "$d/measure.json" peak_rss_anon_kib)"
	# tmpfs pages are shmem, not file: a binary on /dev/shm is counted there
	file="$(($(json_num "$d/measure.json" peak_rss_file_kib) + $(json_num "$d/measure.json" peak_rss_shmem_kib)))"
	fjcpu="$(json_num "$d/fakejudge-measure.json" cpu_s)"
	other=-1
	if [ -n "$busy0" ] && [ -n "$busy1" ]; then
		other="$(awk -v a="$busy0" -v b="$busy1" -v hz="$hz" -v c="$cpu" -v f="$fjcpu" 'BEGIN { o = (b - a) / hz - c - f; print (o < 0 ? 0 : o) }')"
	fi
	results="$(wc -l <"$d/out/results.jsonl" | tr -d ' ')"
	errs=0
	for k in judge_errors plugin_errors metric_errors; do
		errs=$((errs + $(json_num "$d/out/summary.json" "$k")))
	done
	if [ "$results" -ne "$n" ] || [ "$errs" -ne 0 ]; then
		echo "run.sh: N=$n: $results results, $errs errors (see $d/run.log; KEEP=1 keeps it)" >&2
		tail -20 "$d/run.log" >&2
		exit 1
	fi

	# bound: the steps call (one latency, before the first case) plus the
	# scoring calls spread over the effective concurrency.
	rows+=("$(awk -v n="$n" -v wall="$wall" -v calls="$calls" -v steps="$steps" -v cpu="$cpu" -v rss="$rss" -v anon="$anon" -v file="$file" -v fjcpu="$fjcpu" -v other="$other" \
		-v lat="$lat_s" -v c="$eff_conc" 'BEGIN {
			rounds = (steps > 0 ? 1 : 0)
			bound = lat * (rounds + (calls - steps) / c)
			printf "%6d  %8.2f  %6d  %8.2f  %11.2f  %7.1f  %8.1f  %8.1f  %7.2f  %10s  %11.2f  %11s  %11.3f  %7.0f\n",
				n, wall, calls, cpu, (calls > 0 ? cpu * 1000 / calls : 0), rss / 1024, anon / 1024, file / 1024, bound,
				(bound > 0 ? sprintf("%.3f", wall / bound) : "-"), fjcpu,
				(other < 0 ? "-" : sprintf("%.2f", other)), cpu * 1000 / n, n / wall
		}')")
done

echo
what="anvil-host run"
[ "$PROFILE" != 0 ] && what="profilehost (anvil-host run's engine, under the profilers)"
echo "$what, CONFIG=$CONFIG, fake judge latency $LATENCY, --concurrency $CONCURRENCY, judge max_concurrency $JUDGE_CONCURRENCY, --cache off, $(nproc 2>/dev/null || sysctl -n hw.ncpu) cores"
echo "$machine"
printf "%6s  %8s  %6s  %8s  %11s  %7s  %8s  %8s  %7s  %10s  %11s  %11s  %11s  %7s\n" N wall_s calls cpu_s cpu/call_ms rss_MiB anon_MiB file_MiB bound_s wall/bound judge_cpu_s other_cpu_s cpu/case_ms cases/s
for r in "${rows[@]}"; do
	echo "$r"
done
echo "(other_cpu_s: CPU time other processes used during the run; when it is large the machine was busy and wall is skewed)"
echo "(anon_MiB, file_MiB: the sampled peaks of the RSS's anonymous part — heap, stacks, guest memories — and its file part (RssFile + RssShmem) — the binary's text and rodata, mapped whole in 2 MiB folios when the binary lies on ext4, page by page on tmpfs; Linux only)"
