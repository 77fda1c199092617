# Sourced by bench/run-import.sh and bench/run-engine.sh (run from the
# checkout's root): what both need before they measure.
#
#   bench_corpus ENTRIES DIR   generates a picorpus corpus of ENTRIES entries
#                              into DIR unless DIR exists (SHARED names
#                              ../shared when the checkout is elsewhere)
#   bench_need_rg              installs ripgrep, the baseline, where it can

bench_corpus() {
  local entries=$1 dir=$2 shared=${SHARED:-../shared}
  [ -d "$dir" ] && return 0
  if [ ! -d "$shared/tools/picorpus" ]; then
    echo "no corpus at $dir and no generator at $shared/tools/picorpus: set SHARED to the shared directory, or CORPUS to a directory of Pi journals" >&2
    return 1
  fi
  echo "generating $entries entries into $dir"
  (cd "$shared/tools/picorpus" && go run . -out "$dir" -entries "$entries" -seed 1)
}

bench_need_rg() {
  command -v rg >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ripgrep (the search benchmarks' baseline)"
    (apt-get update -qq && apt-get install -y -qq ripgrep) >/dev/null 2>&1 || true
  fi
  command -v rg >/dev/null 2>&1 || echo "warning: ripgrep (rg) is not installed: the benchmarks print no baseline" >&2
}
