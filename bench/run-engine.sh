#!/usr/bin/env bash
# Engine goals benchmark (issue 46, item 1): generates a picorpus corpus
# (default 1,000,000 entries) unless it exists, imports it into a fresh data
# directory, then runs bench/engine: a 'pi-history serve' subprocess per
# memory budget, searched 1 s after start and at steady state, with its heap
# and RSS beside each group; again after dropping the page cache where the
# kernel allows it; the one-shot CLI with no server; bench/live and
# bench/apiload; each beside ripgrep over the same JSONL, and a final table
# "goal / measured / met?".
#
#   nice bash bench/run-engine.sh [ENTRIES [ENGINE FLAGS...]]
#       e.g. nice bash bench/run-engine.sh 150000 -budgets default,256 -n 100
#
# BENCH_OUT (default /tmp/pihist-bench) holds the corpus, binaries, data and
# the servers' logs; KEEP_DATA=1 reuses its data directory (the import is not
# measured then); CORPUS=DIR and SHARED=DIR as for run-import.sh. Not part
# of the test suite: it takes minutes (about 5 at 150,000 entries).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
entries=${1:-1000000}
shift || true
out=${BENCH_OUT:-/tmp/pihist-bench}
mkdir -p "$out"
corpus=${CORPUS:-$out/corpus-$entries}
# shellcheck source=bench/corpus.sh
. bench/corpus.sh
bench_corpus "$entries" "$corpus"
bench_need_rg
go build -o "$out/pi-history" ./cmd/pi-history
go build -o "$out/bench-engine" ./bench/engine
go build -o "$out/bench-live" ./bench/live
go build -o "$out/bench-apiload" ./bench/apiload
data="$out/engine-data"
[ "${KEEP_DATA:-}" = 1 ] || rm -rf "$data"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$out/bench-engine" -bin "$out/pi-history" -data "$data" -corpus "$corpus" -out "$out" \
  -live "$out/bench-live" -apiload "$out/bench-apiload" "$@"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
