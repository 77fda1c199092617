// Pi 1.6: Pi's own threshold compaction inside a run (before the next
// request of the same run) gets Pi's summary, never the template: the
// extension reports it as midRun and the ledger says rollover_declined
// {why: auto_compaction_mid_run} (docs/spec-notes.md, "Implementation
// notes"). Pi 0.73.1 compacts only between runs: nothing to check there.

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, ledger, makeFiles, msgText, piVersion, say, startSession } from "./harness.mjs";

if (piVersion !== "1.6") {
	console.log("mid-run: ok");
	process.exit(0);
}
const root = mkdtempSync(join(tmpdir(), "pih-midrun-"));
// No reminder or fallback before Pi's own threshold (60000 - 4000).
writeFileSync(join(process.env.PI_HISTORY_DATA, "note-context.json"), JSON.stringify({ leadTokens: 0, fallbackBufferTokens: 0, autoRollover: false }));
const reads = ["big1.txt", "big2.txt", "big3.txt", "big4.txt", "big5.txt"];
let n = 0;
let summaries = 0;
const model = (ctx) => {
	const last = msgText(ctx.messages[ctx.messages.length - 1]);
	if (/summar/i.test(last) && !last.includes("big")) {
		summaries++;
		return say("## Goal\nPi's own summary of the reads.");
	}
	if (n < reads.length) return call("read", { path: reads[n++] }, `r${n}`);
	return say("Read them all.");
};
const s = await startSession(root, { contextWindow: 60000, model });
makeFiles(s.cwd, Object.fromEntries(reads.map((r) => [r, { tokens: 14000 }])));
await s.prompt("Read big1.txt to big5.txt.");
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
const comps = s.journal().filter((e) => e.type === "compaction");
check(comps.length >= 1 && comps.every((c) => !c.details?.windowNumber), `compactions: ${JSON.stringify(comps.map((c) => [c.fromHook, c.summary.slice(0, 60)]))}`);
const declined = await ledger("rollover_declined", s.session.sessionManager.getSessionId());
check(declined.length >= 1 && declined.every((r) => r.why === "auto_compaction_mid_run"), `rollover_declined rows: ${JSON.stringify(declined)}`);
s.dispose();
console.log("mid-run: ok");
