// Opens each branch export with Pi 0.73.1's own SessionManager and compares
// it with the original journal opened the same way: the export's current
// leaf must be the chosen leaf, its branch the original's path to that leaf,
// and buildSessionContext the same messages, model and thinking level.
//
// usage: node export-check.mjs CASES.json, where CASES.json is
//   [{"original": FILE, "export": FILE, "leaf": ID, "v1": bool}, …]
// Files are copied first: SessionManager.open rewrites v1/v2 files in place.
// Prints [{export, leaf, entries, messages, problems: [..]}, …] as JSON.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager, buildSessionContext } from "@mariozechner/pi-coding-agent";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const dir = mkdtempSync(join(tmpdir(), "pi-export-check-"));
const strip = (e) => {
  // v1 files get random ids from Pi's migration: compare them without ids.
  const { id, parentId, firstKeptEntryId, ...rest } = e;
  return JSON.stringify(rest);
};
const out = [];
cases.forEach((c, n) => {
  const problems = [];
  const o = join(dir, `o${n}.jsonl`);
  const x = join(dir, `x${n}.jsonl`);
  copyFileSync(c.original, o);
  copyFileSync(c.export, x);
  const orig = SessionManager.open(o, dir);
  const exp = SessionManager.open(x, dir);
  const leaf = c.v1 ? orig.getLeafId() : c.leaf;
  if (!c.v1 && exp.getLeafId() !== c.leaf) problems.push(`leaf ${exp.getLeafId()}, want ${c.leaf}`);
  if (exp.getHeader()?.id !== orig.getHeader()?.id) problems.push(`header id ${exp.getHeader()?.id}, want ${orig.getHeader()?.id}`);
  const ob = orig.getBranch(leaf);
  const xb = exp.getBranch();
  if (xb.length !== ob.length) problems.push(`branch has ${xb.length} entries, want ${ob.length}`);
  const key = c.v1 ? strip : (e) => JSON.stringify(e);
  for (let i = 0; i < Math.min(xb.length, ob.length); i++) {
    if (key(xb[i]) !== key(ob[i])) {
      problems.push(`branch entry ${i} (${ob[i].id}) differs`);
      break;
    }
  }
  if (exp.getEntries().length !== xb.length) problems.push(`file has ${exp.getEntries().length} entries, not just the branch's ${xb.length}`);
  const oc = buildSessionContext(orig.getEntries(), leaf);
  const xc = exp.buildSessionContext();
  if (JSON.stringify(oc) !== JSON.stringify(xc)) problems.push("buildSessionContext differs from the original's for that leaf");
  out.push({ export: c.export, leaf: c.leaf, entries: xb.length, messages: xc.messages.length, problems });
});
rmSync(dir, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out));
