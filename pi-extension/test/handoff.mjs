// The Handoff (seed B): new_context takes the agent's handoff and must be
// alone in its message (beside another call it is refused). One over the
// limit is refused whole (nothing scheduled, nothing written); an accepted
// one is kept in the journal as a note-context/handoff custom entry, carried
// into the new window's summary beside the notebook with the Note Index of
// the session's named notes, and read back through history.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, fauxAssistantMessage, fauxText, fauxToolCall, lastToolResult, makeFiles, msgText, say, scripted, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-ho-"));
const HANDOFF = "Done: compared med1 and med2 (identical layout).\nNext: compare big1 with big2, line counts first.";
let handoffEntry = "";
const plan = [
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("notes", { sections: { Task: "Compare the files.", Next: "compare big1 and big2" } }, "n1"),
	() => call("notes", { op: "write", name: "findings", content: "med files share a layout" }, "w1"),
	// Seed B: new_context alone in its batch.
	() =>
		fauxAssistantMessage([fauxText("both"), fauxToolCall("notes", { reviewed: true }, { id: "n2" }), fauxToolCall("new_context", { userRequested: true, handoff: HANDOFF }, { id: "c0" })], {
			stopReason: "toolUse",
		}),
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.toolName === "new_context" && m.isError && msgText(m).includes("must be the only tool call in its message (this one made 2)"), `new_context beside another call: ${msgText(m)}`);
		return call("new_context", { userRequested: true, handoff: "x".repeat(12001) }, "c1");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.isError && msgText(m).includes("over the limit of 12000 by 1"), `an oversized handoff was not refused: ${msgText(m).slice(0, 300)}`);
		check(!s.entries().some((e) => e.type === "custom" && e.customType === "note-context/handoff"), "a refused handoff was written");
		return call("new_context", { userRequested: true, handoff: HANDOFF }, "c2");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(!m.isError && msgText(m).includes("Handoff saved"), `handoff not accepted: ${msgText(m)}`);
		return say("Rolling over.");
	},
	(ctx) => {
		const first = msgText(ctx.messages[0]);
		check(first.includes("rollover reason: user"), `new window summary: ${first.slice(0, 200)}`);
		const m = first.match(/## Handoff \(written by the agent for this rollover, entry (\w+)\)\n([\s\S]*?)\n\n/);
		check(m && m[2] === HANDOFF, `summary lacks the Handoff:\n${first}`);
		handoffEntry = m[1];
		check(first.includes("## Notebook") && first.indexOf("## Notebook") < first.indexOf("## Handoff"), "the Handoff is not beside the notebook");
		check(/## Note Index[^\n]*\n- findings \(24 characters, updated [^)]+\) \[history entry=\w+\]/.test(first), `summary lacks the Note Index:\n${first}`);
		return call("history", { id: handoffEntry }, "h1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes(`[history entry=${handoffEntry}]`) && t.includes("compare big1 with big2"), `history read of the Handoff: ${t}`);
		return say("Continuing from the Handoff.");
	},
];
const script = scripted(plan);
let s;
s = await startSession(root, { contextWindow: 200000, model: script.model });
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 } });
await s.prompt("Compare the files, then start a fresh context window with a handoff.");
script.done();
const journal = s.journal();
const handoffs = journal.filter((e) => e.type === "custom" && e.customType === "note-context/handoff");
check(handoffs.length === 1 && handoffs[0].data.text === HANDOFF && handoffs[0].id === handoffEntry, `journal handoffs: ${JSON.stringify(handoffs)}`);
const comps = journal.filter((e) => e.type === "compaction");
check(comps.length === 1 && comps[0].details.handoffEntryId === handoffEntry, `compaction details: ${JSON.stringify(comps.map((c) => c.details))}`);
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("handoff: ok");
