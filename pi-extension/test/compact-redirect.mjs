// redirectCompact (seed B, Pi 1.6): the user's /compact becomes the
// /rollover preparation. An SDK compact() rejects with "Compaction
// cancelled", Pi's summarizer is not called, the custom instructions reach
// the agent to shape its Handoff, and the run stops at the checkpoint.

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, makeFiles, msgText, piVersion, say, scripted, startSession } from "./harness.mjs";

if (piVersion !== "1.6") {
	console.log("compact-redirect: ok (Pi 1.6 only: 0.73.1 does not say which compaction is the user's)");
	process.exit(0);
}
writeFileSync(join(process.env.PI_HISTORY_DATA, "note-context.json"), JSON.stringify({ leadTokens: 20000, fallbackBufferTokens: 2000, minReclaimTokens: 10000, redirectCompact: true }));
const root = mkdtempSync(join(tmpdir(), "pih-cr-"));
const HANDOFF = "Done: read both files.\nNext: list their differences.";
const plan = [
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("notes", { sections: { Task: "Read the files.", Next: "list differences" } }, "n1"),
	() => say("Read both."),
	(ctx) => {
		const t = ctx.messages.map(msgText).find((x) => x.includes("(/rollover)")) ?? "";
		check(t.includes("keep it to three lines"), `the preparation lacks the /compact instructions: ${t}`);
		return call("new_context", { userRequested: true, handoff: HANDOFF }, "c1");
	},
	(ctx) => {
		check(!lastToolResult(ctx).isError, `new_context refused: ${msgText(lastToolResult(ctx))}`);
		return say("Stopping.");
	},
];
const script = scripted(plan);
const s = await startSession(root, { contextWindow: 200000, model: script.model });
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 } });
await s.prompt("Read big1.txt and big2.txt and take notes.");
let rejected = "";
try {
	await s.session.compact("keep it to three lines");
} catch (e) {
	rejected = e instanceof Error ? e.message : String(e);
}
check(rejected.includes("Compaction cancelled"), `compact() was not cancelled: ${rejected || "it resolved"}`);
const { settle } = await import("./harness.mjs");
await settle(s.session);
script.done();
const comps = s.journal().filter((e) => e.type === "compaction");
check(comps.length === 1 && comps[0].details?.reason === "user" && comps[0].summary.includes(HANDOFF), `compactions: ${JSON.stringify(comps.map((c) => [c.details, c.summary.slice(0, 80)]))}`);
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("compact-redirect: ok");
