// The next prompt typed the instant the previous one returns, right after a
// host rollover: it is accepted, nothing is lost, and the model answers it
// in the new window (Pi 1.6: the rollover was written inside the run; Pi
// 0.73.1: the prompt waits until the extension's compaction is over).

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastMessage, lastToolResult, makeFiles, msgText, piVersion, say, settle, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-next-"));
const plan = [
	() => call("notes", { sections: { Task: "Survey the big files.", Next: "read big1.txt" } }, "n1"),
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("read", { path: "big3.txt" }, "r3"),
	() => call("notes", { sections: { State: "read big1-3", Next: "wait for the user" } }, "n2"),
	(ctx) => {
		check(msgText(lastToolResult(ctx)).includes("Rollover scheduled by the host"), `no host schedule: ${msgText(lastToolResult(ctx))}`);
		return say("Checkpoint written; ending the turn.");
	},
];
let step = 0;
let answered = false;
const model = (ctx) => {
	if (step < plan.length) return plan[step++](ctx);
	const last = msgText(lastMessage(ctx));
	const first = msgText(ctx.messages[0]);
	check(first.includes("Context window #2"), `request after the rollover does not start from the summary: ${first.slice(0, 200)}`);
	if (last.includes("SECOND-QUESTION")) {
		answered = true;
		return say("SECOND-ANSWER");
	}
	check(last.includes("Context window #2 is open"), `unexpected request in the new window: ${last.slice(0, 200)}`);
	return say("Continuing in the new window.");
};
const s = await startSession(root, { contextWindow: 60000, model });
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 }, "big3.txt": { tokens: 12000 } });

await s.session.prompt("Survey big1.txt to big3.txt.");
// No pause: the user types the next prompt as soon as the first returns.
await s.session.prompt("SECOND-QUESTION: what next?");
await settle(s.session);
check(answered, "the second prompt never reached the model");
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);

const journal = s.journal();
const comp = journal.findIndex((e) => e.type === "compaction");
const user2 = journal.findIndex((e) => e.type === "message" && e.message.role === "user" && msgText(e.message).includes("SECOND-QUESTION"));
check(comp > 0 && user2 > comp, `the second prompt is not in the new window (compaction at ${comp}, prompt at ${user2})`);
check(journal.filter((e) => e.type === "compaction").length === 1, "more than one compaction");
const reply = journal.slice(user2 + 1).find((e) => e.type === "message" && e.message.role === "assistant");
check(reply && msgText(reply.message).includes("SECOND-ANSWER"), "the second prompt has no answer in the journal");
if (piVersion === "1.6") {
	// The rollover was written inside the first run: compaction, then the continuation, then its answer, before the second prompt.
	check(journal[comp + 1]?.customType === "note-context/continue", "no continuation right after the boundary compaction");
}
s.dispose();
console.log("next-prompt: ok");
