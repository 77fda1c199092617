#!/usr/bin/env bash
# Quick A/B probes of a running server's first pages, for comparing two
# builds or two data directories on the same needles (bench/engine's
# -needles file). Each run starts `pi-history serve --no-watch`, sends the
# needles over HTTP, prints medians and sums, then the server's resident
# memory (anonymous, file-backed, peak) from /proc, and stops it.
#
#   bash bench/probe/probe.sh MODE BIN DATA NEEDLES [NEEDLE...]
#
# MODE:
#   again  the given needles (default: eight slow ones of picorpus seed 1)
#          four times each; median of the last three (holds only warm)
#   first  the given needles three times each, all three printed (the
#          first is what a needle asked once costs)
#   once   the steady first-page set of NEEDLES once each, 3 s after start
#   early  the early first-page set of NEEDLES once each, from 1 s after
#          start (the "no warm-up" figure)
# Alternate builds run after run: single runs move by several percent.
set -euo pipefail
mode=$1 bin=$2 data=$3 needles=$4
shift 4
port=${PORT:-7398}
start=$(date +%s.%N)
"$bin" serve --data "$data" --no-watch --addr "127.0.0.1:$port" > "${TMPDIR:-/tmp}/probe-serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.02; done
token=$("$bin" token --data "$data")
python3 - "$mode" "$port" "$token" "$start" "$needles" "$pid" "$@" <<'PY'
import json, statistics, sys, time, urllib.parse, urllib.request
mode, port, token, start, path, pid = sys.argv[1:7]
given = sys.argv[7:]
sets = json.load(open(path))
def ask(q):
    u = "http://127.0.0.1:%s/v1/search?" % port + urllib.parse.urlencode({"needle": q, "limit": 50, "scope": "all"})
    req = urllib.request.Request(u, headers={"Authorization": "Bearer " + token})
    t = time.time(); urllib.request.urlopen(req).read(); return (time.time() - t) * 1000
def rss():
    f = {k: v.split()[0] for k, v in (l.split(":", 1) for l in open("/proc/%s/status" % pid)) if v.split()}
    return "server RSS: anonymous %.0f MB, file-backed %.0f MB, peak %.0f MB" % (
        int(f["RssAnon"]) / 1024, int(f["RssFile"]) / 1024, int(f["VmHWM"]) / 1024)
slow = ["sted with th", "lled and ex", "ple even", "nctions la", " simple inter", "ets of r", "s get pa", "tests for ea"]
if mode in ("again", "first"):
    time.sleep(max(0, float(start) + 3 - time.time()))
    qs = given or slow
    meds = []
    for q in qs:
        ts = [ask(q) for _ in range(4 if mode == "again" else 3)]
        if mode == "again":
            meds.append(statistics.median(ts[1:])); print("%-24r median %7.1f ms" % (q, meds[-1]))
        else:
            print("%-24r %s" % (q, "  ".join("%6.1f" % x for x in ts)))
    if meds: print("sum of medians %.1f ms" % sum(meds))
else:
    which = 0 if mode == "early" else 1
    time.sleep(max(0, float(start) + (1 if mode == "early" else 3) - time.time()))
    ts = sorted(ask(x["Needle"]) for x in sets[which]["first page, all scope, 3+ chars"])
    print("%s: n %d p50 %.2f p99 %.2f max %.1f sum %.0f ms" % (mode, len(ts), ts[len(ts) // 2], ts[int(len(ts) * 0.99) - 1], ts[-1], sum(ts)))
print(rss())
PY
