// An external compaction owner (another extension that compacts; the model
// is listed in externalCompactionModels), loaded before this extension
// (PI_TEST_OWNER=before) or after it (after): a user-requested rollover
// passes the gate, is carried out by Pi's compaction, and the owner's
// summary opens the new window; this extension writes no template, says so
// in the ledger and in the continuation, and the status line says
// compaction: external; a prompt typed the instant the first one returns is
// answered in the new window.

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { call, check, lastToolResult, ledger, makeFiles, msgText, say, settle, startSession } from "./harness.mjs";

const order = process.env.PI_TEST_OWNER === "after" ? "after" : "before";
const owner = join(dirname(fileURLToPath(import.meta.url)), "owner.ts");
const root = mkdtempSync(join(tmpdir(), "pih-owner-"));
writeFileSync(
	join(process.env.PI_HISTORY_DATA, "note-context.json"),
	JSON.stringify({ leadTokens: 20000, fallbackBufferTokens: 2000, minReclaimTokens: 10000, externalCompactionModels: ["faux/faux-1"] }),
);
const plan = [
	() => call("read", { path: "big1.txt" }, "r1"),
	(ctx) => {
		check(msgText(lastToolResult(ctx)).includes("compaction: external"), `no compaction: external in the status line: ${msgText(lastToolResult(ctx)).slice(-200)}`);
		return call("notes", { sections: { Task: "Read big1.txt.", Next: "answer" } }, "n1");
	},
	() => call("new_context", { userRequested: true }, "c1"),
	(ctx) => {
		check(!lastToolResult(ctx).isError, `new_context refused: ${msgText(lastToolResult(ctx))}`);
		return say("Ending the turn for the rollover.");
	},
];
// After the rollover: the continuation (if it ran before the user's next
// prompt) and the next prompt, typed the instant the first returned.
let step = 0;
let answered = false;
const model = (ctx) => {
	if (step < plan.length) return plan[step++](ctx);
	check(msgText(ctx.messages[0]).includes("OWNER SUMMARY"), `the new window does not start from the owner's summary: ${msgText(ctx.messages[0]).slice(0, 200)}`);
	const last = msgText(ctx.messages[ctx.messages.length - 1]);
	if (last.includes("SECOND-QUESTION")) {
		answered = true;
		return say("SECOND-ANSWER");
	}
	check(last.includes("was not written from your notebook"), `continuation: ${last}`);
	return say("Done.");
};
const s = await startSession(root, {
	contextWindow: 60000,
	model,
	before: order === "before" ? [owner] : [],
	after: order === "after" ? [owner] : [],
});
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 } });
await s.session.prompt("Read big1.txt, then start a fresh window.");
await s.session.prompt("SECOND-QUESTION");
await settle(s.session);
check(answered, "the prompt typed right after the rollover was not answered");
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
const comps = s.journal().filter((e) => e.type === "compaction");
check(comps.length === 1 && comps[0].summary.startsWith("OWNER SUMMARY") && comps[0].details?.owner, `compactions (${order}): ${JSON.stringify(comps).slice(0, 300)}`);
const sid = s.session.sessionManager.getSessionId();
const declined = await ledger("rollover_declined", sid);
check(declined.length === 1 && declined[0].why === "external_owner", `rollover_declined rows: ${JSON.stringify(declined)}`);
check((await ledger("rollover", sid)).length === 0, "a template rollover row for the owner's compaction");
s.dispose();
console.log("owner: ok");
