// A host rollover scheduled by a notes write is cancelled when the user
// aborts the run; after /tree the next tool result says the branch changed.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, ledger, makeFiles, msgText, say, scripted, settle, sleep, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-abort-"));
let s;
const plan = [
	() => call("notes", { sections: { Task: "Read the big files.", Next: "read big1.txt" } }, "n1"),
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("read", { path: "big3.txt" }, "r3"),
	() => call("notes", { sections: { State: "read big1-3", Next: "report" } }, "n2"),
	async (ctx) => {
		check(msgText(lastToolResult(ctx)).includes("Rollover scheduled by the host"), "no host schedule");
		setTimeout(() => s.session.abort(), 0); // the user presses Escape
		await sleep(300);
		return say("Still working on it...");
	},
	// after /tree back to the first notes result, a new prompt
	() => call("read", { path: "small.txt" }, "r4"),
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes("[note-context] notes rev 1 · branch changed — verify workspace state"), `no branch-changed line: ${t}`);
		return say("Verified.");
	},
];
const script = scripted(plan);
s = await startSession(root, {
	contextWindow: 60000,
	model: script.model,
});
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 }, "big3.txt": { tokens: 12000 }, "small.txt": { tokens: 50 } });
await s.prompt("Read the big files.");
await settle(s.session);
const sid = s.session.sessionManager.getSessionId();
check(!s.entries().some((e) => e.type === "compaction"), "the aborted run still rolled over");
const cancelled = await ledger("rollover_cancelled", sid);
check(cancelled.length === 1 && cancelled[0].why === "user_abort" && cancelled[0].reason === "host", `cancel rows: ${JSON.stringify(cancelled)}`);

const firstNotes = s.entries().find((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "notes");
await s.session.navigateTree(firstNotes.id, {});
await s.prompt("Check the small file.");
script.done();
s.dispose();
console.log("abort-tree: ok");
