// Opens branch exports with Pi 1.6.0's own SessionManager and compares each
// with its original journal opened the same way: the export's current leaf
// must be the chosen leaf, its branch the original's path to that leaf
// (entry for entry, as Pi parsed them), and the context Pi rebuilds (system
// checkpoint, summaries, context edits applied) the same.
//
// usage: node check-exports.mjs CASES.json, where CASES.json is
//   [{"original": FILE, "export": FILE, "leaf": ID}, …]
// Prints [{export, leaf, entries, messages, problems: [..]}, …] as JSON.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const dir = mkdtempSync(join(tmpdir(), "pi16-export-check-"));
const out = [];
cases.forEach((c, n) => {
  const problems = [];
  const o = join(dir, `o${n}.jsonl`);
  const x = join(dir, `x${n}.jsonl`);
  copyFileSync(c.original, o);
  copyFileSync(c.export, x);
  const orig = SessionManager.open(o, dir);
  const exp = SessionManager.open(x, dir);
  if (exp.getLeafId() !== c.leaf) problems.push(`leaf ${exp.getLeafId()}, want ${c.leaf}`);
  if (exp.getHeader()?.id !== orig.getHeader()?.id) problems.push(`header id ${exp.getHeader()?.id}, want ${orig.getHeader()?.id}`);
  const ob = orig.getBranch(c.leaf);
  const xb = exp.getBranch();
  if (xb.length !== ob.length) problems.push(`branch has ${xb.length} entries, want ${ob.length}`);
  for (let i = 0; i < Math.min(xb.length, ob.length); i++) {
    if (JSON.stringify(xb[i]) !== JSON.stringify(ob[i])) {
      problems.push(`branch entry ${i} (${ob[i].id}) differs`);
      break;
    }
  }
  if (exp.getEntries().length !== xb.length) problems.push(`file has ${exp.getEntries().length} entries, not just the branch's ${xb.length}`);
  orig.branch(c.leaf); // in memory only: the context as of that leaf
  const oc = orig.buildSessionContext();
  const xc = exp.buildSessionContext();
  if (JSON.stringify(oc) !== JSON.stringify(xc)) problems.push("buildSessionContext differs from the original's for that leaf");
  out.push({ export: c.export, leaf: c.leaf, entries: xb.length, messages: xc.messages.length, problems });
});
rmSync(dir, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out));
