// A long session: the model writes notes and reads large files, the host
// schedules a rollover after a notes write, Pi's journal gets a template
// compaction (fromHook) holding the notebook verbatim and, at the second
// rollover, the index of earlier user messages; the next request starts
// from it, and a history query in the new window finds text that left it.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, ledger, makeFiles, msgText, say, scripted, startSession, toolResults } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-long-"));
const plan = [
	// run 1
	() => call("notes", { sections: { Task: "Survey the big files; report MARKER_ALPHA's line.", Next: "read big1.txt" } }, "n1"),
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("read", { path: "big3.txt" }, "r3"),
	() => call("notes", { sections: { State: "read big1-3; MARKER_ALPHA is in big1.txt", Next: "read big4.txt" } }, "n2"),
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes("Rollover scheduled by the host"), `notes result without the host schedule: ${t}`);
		return say("Checkpoint written; ending the turn.");
	},
	// the continuation starts window 2 in the same prompt's follow-up run
	(ctx) => {
		const first = msgText(ctx.messages[0]);
		check(first.includes("compacted into the following summary") && first.includes("## Notebook"), `window 2 does not start from the summary: ${first.slice(0, 300)}`);
		check(first.includes("MARKER_ALPHA is in big1.txt"), "summary lacks the notebook text");
		check(!ctx.messages.some((m) => msgText(m).includes("big1.txt line 5:")), "big1 content still in the window");
		return call("history", { query: "MARKER_ALPHA" }, "h1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(/\[history entry=\w+\] w1 toolResult\(read\)/.test(t), `history did not find the read result that left the window: ${t}`);
		return say("MARKER_ALPHA found in big1.txt.");
	},
	// run 2 (second user prompt): more reads, a second host rollover
	() => call("read", { path: "big4.txt" }, "r4"),
	() => call("read", { path: "big5.txt" }, "r5"),
	() => call("read", { path: "big6.txt" }, "r6"),
	() => call("notes", { sections: { State: "read big4-6 too", Next: "answer" } }, "n3"),
	() => say("Done for now."),
	(ctx) => {
		const first = msgText(ctx.messages[0]);
		check(first.includes("Context window #3"), `window 3 summary: ${first.slice(0, 200)}`);
		return say("All files surveyed.");
	},
];
const script = scripted(plan);
const s = await startSession(root, {
	contextWindow: 60000,
	model: script.model,
});
makeFiles(s.cwd, {
	"big1.txt": { tokens: 12000, marker: "MARKER_ALPHA sits here" },
	"big2.txt": { tokens: 12000 },
	"big3.txt": { tokens: 12000 },
	"big4.txt": { tokens: 12000 },
	"big5.txt": { tokens: 12000 },
	"big6.txt": { tokens: 12000 },
});

await s.prompt("Please survey big1.txt to big3.txt and tell me where MARKER_ALPHA is.");
await s.prompt("Now survey big4.txt to big6.txt as well.");
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);

const journal = s.journal();
const comps = journal.filter((e) => e.type === "compaction");
check(comps.length === 2, `want 2 compactions, got ${comps.length}`);
for (const c of comps) {
	check(c.fromHook === true, "compaction not fromHook");
	check(c.details?.reason === "host", `reason ${c.details?.reason}`);
}
const nb2 = "## Task\nSurvey the big files; report MARKER_ALPHA's line.\n\n## Next\nread big4.txt\n\n## State\nread big1-3; MARKER_ALPHA is in big1.txt";
check(comps[0].summary.includes(`)\n${nb2}\n`), `first summary lacks the notebook verbatim:\n${comps[0].summary}`);
check(comps[1].summary.includes("## Earlier user messages"), `second summary has no index:\n${comps[1].summary}`);
const firstUser = journal.find((e) => e.type === "message" && e.message.role === "user");
check(comps[1].summary.includes(`w1 [history entry=${firstUser.id}] Please survey big1.txt`), `index lacks the first user message:\n${comps[1].summary}`);
const conts = journal.filter((e) => e.type === "custom_message" && e.customType === "note-context/continue");
check(conts.length === 2, `continuations: ${conts.length}`);
// Each continuation promises the index of earlier user messages only when its summary holds one.
for (const [i, c] of conts.entries()) {
	const text = typeof c.content === "string" ? c.content : c.content.map((b) => b.text ?? "").join("");
	const has = comps[i].summary.includes("## Earlier user messages");
	check(text.includes("an index of earlier user messages") === has, `continuation ${i + 1} (summary ${has ? "with" : "without"} an index): ${text}`);
}
// Entry-id trailers are never persisted.
check(!/this-message-id=[0-9a-f]{8}/.test(JSON.stringify(journal)), "a trailer reached the journal");
// ... but the model saw them.
check(s.requests.some((c) => c.messages.some((m) => m.role === "toolResult" && msgText(m).includes("[note-context: this-message-id="))), "no trailer reached the model");
check(s.requests.every((c) => c.messages.every((m) => m.role !== "assistant" || !msgText(m).includes("this-message-id"))), "an assistant message got a trailer");
const rows = await ledger("rollover", s.session.sessionManager.getSessionId());
check(rows.length === 2 && rows.every((r) => r.reason === "host"), `ledger rollover rows: ${JSON.stringify(rows)}`);
check(toolResults(journal, "history").length === 1, "history result missing");
// The first rollover's five follow-up turns held the one history call (the
// second rollover came before its fifth turn).
const follow = await ledger("rollover_followup", s.session.sessionManager.getSessionId());
check(follow.length === 1 && follow[0].window === 2 && follow[0].calls === 1, `rollover_followup rows: ${JSON.stringify(follow)}`);
s.dispose();
console.log("long-session: ok");
