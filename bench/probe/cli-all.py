"""The one-shot `pi-history search --all` over the 20 needles bench/engine
gives the CLI (every tenth of the steady 3+ character first-page set of a
-needles file), each timed with its peak RSS; prints them sorted, then the
p50 and worst. Run it twice and take the second when comparing builds:
the first keeps the sessions' branches a directory of an earlier build
lacks.

    python3 bench/probe/cli-all.py BIN DATA NEEDLES
"""
import json, os, subprocess, sys, time

binp, data, path = sys.argv[1:4]
steady = json.load(open(path))[1]["first page, all scope, 3+ chars"]
needles = [steady[i * len(steady) // 20]["Needle"] for i in range(20)]
rows = []
for q in needles:
    t = time.time()
    p = subprocess.Popen([binp, "search", "--data", data, "--all", "--", q], stdout=subprocess.PIPE)
    lines = p.stdout.read().count(b"\n")
    _, _, ru = os.wait4(p.pid, 0)
    rows.append((time.time() - t, ru.ru_maxrss / 1024, lines, q))
rows.sort()
for r in rows:
    print("%.3f s  peak RSS %4.0f MB  %8d lines  %r" % r)
print("p50 %.3f s, worst %.3f s, peak RSS at most %.0f MB" % ((rows[9][0] + rows[10][0]) / 2, rows[-1][0], max(r[1] for r in rows)))
