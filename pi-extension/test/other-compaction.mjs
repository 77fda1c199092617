// Pi 1.6: another extension, loaded before this one, already proposes a
// compaction at the boundary a host rollover is due at. That compaction
// opens the new window: this extension stacks no second one on it and the
// ledger says rollover_cancelled {why: other_compaction}. (Pi 0.73.1 has no
// boundaries: nothing to check there.)

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { call, check, lastToolResult, ledger, makeFiles, msgText, piVersion, say, scripted, startSession } from "./harness.mjs";

if (piVersion !== "1.6") {
	console.log("other-compaction: ok");
	process.exit(0);
}
const root = mkdtempSync(join(tmpdir(), "pih-other-"));
const plan = [
	() => call("notes", { sections: { Task: "Survey the big files.", Next: "read big1.txt" } }, "n1"),
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("read", { path: "big3.txt" }, "r3"),
	() => call("notes", { sections: { State: "read big1-3", Next: "wait" } }, "n2"),
	(ctx) => {
		check(msgText(lastToolResult(ctx)).includes("Rollover scheduled by the host"), "no host schedule");
		return say("Ending the turn.");
	},
	(ctx) => {
		check(msgText(ctx.messages[0]).includes("PROPOSER SUMMARY"), `the next request does not start from the other compaction: ${msgText(ctx.messages[0]).slice(0, 200)}`);
		return say("Next.");
	},
];
const script = scripted(plan);
const s = await startSession(root, {
	contextWindow: 60000,
	model: script.model,
	before: [join(dirname(fileURLToPath(import.meta.url)), "proposer.ts")],
});
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 }, "big3.txt": { tokens: 12000 } });
await s.prompt("Survey big1.txt to big3.txt.");
await s.prompt("Next.");
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
const journal = s.journal();
const comps = journal.filter((e) => e.type === "compaction");
check(comps.length === 1 && comps[0].summary === "PROPOSER SUMMARY", `compactions: ${JSON.stringify(comps.map((c) => c.summary.slice(0, 40)))}`);
check(!journal.some((e) => e.customType === "note-context/continue"), "a continuation was written for a rollover that did not happen");
const sid = s.session.sessionManager.getSessionId();
const cancelled = await ledger("rollover_cancelled", sid);
check(cancelled.length === 1 && cancelled[0].why === "other_compaction" && cancelled[0].reason === "host", `rollover_cancelled rows: ${JSON.stringify(cancelled)}`);
check((await ledger("rollover", sid)).length === 0, "a rollover row for the other extension's compaction");
s.dispose();
console.log("other-compaction: ok");
