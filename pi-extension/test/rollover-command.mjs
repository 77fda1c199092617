// /rollover [instructions] (seed B): instructions over 2,000 characters are
// refused with the limit and nothing starts; a typed /rollover shows the
// agent a preparation message carrying the instructions, the agent refreshes
// its notes and calls new_context with a Handoff, and the run ends at the
// checkpoint: the new window's summary holds the Handoff and no model
// request follows until the user types again. A preparation the agent ends
// without a rollover is reported once as not completed, and nothing nudges.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, captured, check, lastToolResult, makeFiles, msgText, say, scripted, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-ro-"));
const HANDOFF = "Done: read both files.\nNext: summarise them for the user.";
// The preparation message as the model reads it (a custom message reaches it as a user message).
const prepared = (ctx) => ctx.messages.filter((m) => msgText(m).includes("The user asked for a new context window (/rollover)"));
const plan = [
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("notes", { sections: { Task: "Read the files.", Next: "summarise" } }, "n1"),
	() => say("Read both."),
	// the first /rollover: the agent declines to roll over
	(ctx) => {
		check(prepared(ctx).length === 1, "no preparation message");
		return say("I will not roll over now.");
	},
	// the second /rollover, with instructions
	(ctx) => {
		const p = prepared(ctx);
		const t = msgText(p[p.length - 1]);
		check(p.length === 2 && t.includes("call new_context alone") && t.includes("mention the summary format"), `preparation message: ${t}`);
		return call("notes", { reviewed: true }, "n2");
	},
	() => call("new_context", { userRequested: true, handoff: HANDOFF }, "c1"),
	(ctx) => {
		check(!lastToolResult(ctx).isError, `new_context refused: ${msgText(lastToolResult(ctx))}`);
		return say("Handoff written; stopping.");
	},
	// the user's next message, in the new window
	(ctx) => {
		const first = msgText(ctx.messages[0]);
		check(first.includes("rollover reason: user") && first.includes(`## Handoff (written by the agent for this rollover, entry `) && first.includes(HANDOFF), `new window summary: ${first}`);
		check(!ctx.messages.some((m) => msgText(m).includes("[note-context] Context window #")), "a continuation was sent after a /rollover");
		return say("Here is the summary.");
	},
];
const script = scripted(plan);
const s = await startSession(root, { contextWindow: 200000, model: script.model });
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 } });


await s.prompt("Read big1.txt and big2.txt and take notes.");
let n = s.requests.length;
let out = await captured(() => s.prompt(`/rollover ${"i".repeat(2001)}`));
check(out.includes("the instructions have 2001 characters; the limit is 2000"), `long instructions: ${out}`);
check(s.requests.length === n, "a refused /rollover made a model request");

out = await captured(() => s.prompt("/rollover"));
check(out.includes("Rollover not completed") && s.requests.length === n + 1, `a preparation without a rollover: ${out} (${s.requests.length - n} requests)`);
check(!s.entries().some((e) => e.type === "compaction"), "a compaction without a rollover");

n = s.requests.length;
out = await captured(() => s.prompt("/rollover mention the summary format"));
check(out.includes("Rollover done"), `the checkpoint was not reported: ${out}`);
check(s.requests.length === n + 3, `requests during the preparation: ${s.requests.length - n}, want 3 and none after the checkpoint`);
const comps = s.journal().filter((e) => e.type === "compaction");
check(comps.length === 1 && comps[0].details.reason === "user" && comps[0].summary.includes(HANDOFF), `compactions: ${JSON.stringify(comps.map((c) => c.details))}`);

await s.prompt("Go on.");
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("rollover-command: ok");
