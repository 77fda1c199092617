#!/usr/bin/env bash
# Import benchmark: generates a picorpus corpus (default 1,000,000 entries,
# ~1.4 GB of JSONL) unless it exists, imports it into a fresh data directory,
# and prints MB/s, entries/s, store+index size as a ratio of the JSONL, peak
# RSS, then live-ingest latency and the search benchmark (with ripgrep as the
# baseline) over the same corpus.
#
#   bash bench/run-import.sh [ENTRIES]        (BENCH_OUT=/tmp/pihist-bench by default)
#
# Needs ../shared/tools/picorpus (SHARED=DIR names another shared directory;
# or CORPUS=DIR pointing at any directory of
# Pi journals). Not part of the test suite: it takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
entries=${1:-1000000}
out=${BENCH_OUT:-/tmp/pihist-bench}
mkdir -p "$out"
corpus=${CORPUS:-$out/corpus-$entries}
# shellcheck source=bench/corpus.sh
. bench/corpus.sh
bench_corpus "$entries" "$corpus"
bench_need_rg
go build -o "$out/pi-history" ./cmd/pi-history
go build -o "$out/bench-search" ./bench/search
go build -o "$out/bench-live" ./bench/live
rm -rf "$out/data"
jsonl=$(find "$corpus" -name '*.jsonl' -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "importing $(awk -v b="$jsonl" 'BEGIN{printf "%.0f", b/1e6}') MB of JSONL"
/usr/bin/time -f '%e %M' -o "$out/time.txt" "$out/pi-history" import --json --data "$out/data" "$corpus" > "$out/import.json" &
# Sample the importer's resident memory by kind: anonymous (Go heap, Pebble's
# cache and memtables) and file-backed (mapped index segments).
sleep 0.5
pid=$(pgrep -n -f "$out/pi-history import") || true
maxanon=0 maxfile=0
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
  read -r anon file < <(awk '/^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {print a+0, f+0}' "/proc/$pid/status" 2>/dev/null || echo "0 0")
  [ "${anon:-0}" -gt "$maxanon" ] && maxanon=$anon
  [ "${file:-0}" -gt "$maxfile" ] && maxfile=$file
  sleep 1
done
wait
read -r secs rss < "$out/time.txt"
n=$(sed -n 's/.*"entries":\([0-9]*\).*/\1/p' "$out/import.json")
"$out/pi-history" stats --json --data "$out/data" > "$out/stats.json"
store=$(sed -n 's/.*"storeBytes":\([0-9]*\).*/\1/p' "$out/stats.json")
index=$(sed -n 's/.*"indexBytes":\([0-9]*\).*/\1/p' "$out/stats.json")
awk -v b="$jsonl" -v s="$secs" -v n="$n" -v st="$store" -v ix="$index" -v rss="$rss" -v ma="$maxanon" -v mf="$maxfile" 'BEGIN {
  printf "import: %d entries in %.1f s: %.1f MB/s, %.0f entries/s\n", n, s, b/1e6/s, n/s
  printf "size: store %.0f MB + index %.0f MB = %.2fx the JSONL\n", st/1e6, ix/1e6, (st+ix)/b
  printf "peak RSS: %.0f MB (sampled each second: anonymous %.0f MB, file-backed %.0f MB)\n", rss/1024, ma/1024, mf/1024 }'
"$out/bench-live" -bin "$out/pi-history" -n 300
"$out/bench-search" -data "$out/data" -corpus "$corpus"
