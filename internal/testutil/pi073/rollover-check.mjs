// Prints, as JSON, what Pi 0.73.1's exported compaction primitives compute on
// each journal named on the command line: the active path, estimateTokens of
// every message entry, buildSessionContext's messages, and findCutPoint for a
// ladder of keepRecentTokens values from the start of the path and from the
// boundary prepareCompaction would use. rollover's Go tests compare their
// port with this output; nothing here is reimplemented except the walk to
// the root, which SessionManager.getBranch does the same way.
import { readFileSync } from "node:fs";
import {
  buildSessionContext,
  estimateTokens,
  findCutPoint,
  migrateSessionEntries,
} from "@mariozechner/pi-coding-agent";

export const KEEPS = [0, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 20000, 1000000];

function load(file) {
  // As loadEntriesFromFile: trim, split on LF, skip lines that do not parse.
  const entries = [];
  for (const line of readFileSync(file, "utf8").trim().split("\n")) {
    if (!line.trim()) continue;
    try {
      entries.push(JSON.parse(line));
    } catch {}
  }
  if (entries.length === 0 || entries[0].type !== "session" || typeof entries[0].id !== "string") return null;
  migrateSessionEntries(entries);
  return entries.filter((e) => e.type !== "session");
}

function activePath(entries) {
  const byId = new Map(entries.map((e) => [e.id, e]));
  const path = [];
  const seen = new Set();
  let cur = entries[entries.length - 1];
  while (cur && !seen.has(cur.id)) {
    seen.add(cur.id);
    path.unshift(cur);
    cur = cur.parentId ? byId.get(cur.parentId) : undefined;
  }
  return path;
}

function boundaryStart(path) {
  let prev = -1;
  for (let i = path.length - 1; i >= 0; i--) {
    if (path[i].type === "compaction") {
      prev = i;
      break;
    }
  }
  if (prev < 0) return 0;
  const k = path.findIndex((e) => e.id === path[prev].firstKeptEntryId);
  return k >= 0 ? k : prev + 1;
}

const out = [];
for (const file of process.argv.slice(2)) {
  const entries = load(file);
  if (!entries || entries.length === 0) {
    out.push({ file, empty: true });
    continue;
  }
  const path = activePath(entries);
  const estimates = path.map((e) => (e.type === "message" ? estimateTokens(e.message) : null));
  const ctx = buildSessionContext(entries);
  const context = ctx.messages.map((m) => ({ role: m.role, tokens: estimateTokens(m) }));
  const starts = [...new Set([0, boundaryStart(path)])];
  const cuts = [];
  for (const start of starts) {
    for (const keep of KEEPS) {
      const c = findCutPoint(path, start, path.length, keep);
      cuts.push({ start, keep, firstKept: c.firstKeptEntryIndex, turnStart: c.turnStartIndex, split: c.isSplitTurn });
    }
  }
  out.push({ file, types: path.map((e) => e.type), estimates, context, cuts });
}
process.stdout.write(JSON.stringify(out));
