// Writes a real session journal with Pi 0.73.1's own SessionManager, one
// command at a time, for the notebook round-trip test
// (notebook/pi_roundtrip_test.go).
//
// usage: node notebook-append.mjs CWD SESSIONS_DIR
// Reads one JSON command per line on stdin and answers each with one JSON
// line on stdout, after the entry is on disk (SessionManager appends
// synchronously):
//   {"op": "message", "message": {...}}          → {"id": ID, "file": FILE}
//   {"op": "custom", "customType": T, "data": D} → {"id": ID, "file": FILE}
//   {"op": "reopen"}   → {"leaf": ID, "branch": [{id, type, customType, data}, …]}
//                        (the file opened afresh with SessionManager.open)
// A failed command answers {"error": MESSAGE}.
import { createInterface } from "node:readline";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const [cwd, dir] = process.argv.slice(2);
const sm = SessionManager.create(cwd, dir);
const answer = (v) => process.stdout.write(JSON.stringify(v) + "\n");

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  try {
    const cmd = JSON.parse(line);
    switch (cmd.op) {
      case "message":
        answer({ id: sm.appendMessage(cmd.message), file: sm.getSessionFile() });
        break;
      case "custom":
        answer({ id: sm.appendCustomEntry(cmd.customType, cmd.data), file: sm.getSessionFile() });
        break;
      case "reopen": {
        const re = SessionManager.open(sm.getSessionFile(), dir);
        const branch = re.getBranch().map((e) => ({ id: e.id, type: e.type, customType: e.customType, data: e.data }));
        answer({ leaf: re.getLeafId(), branch });
        break;
      }
      default:
        answer({ error: `unknown op ${JSON.stringify(cmd.op)}` });
    }
  } catch (err) {
    answer({ error: String(err?.stack ?? err) });
  }
}
