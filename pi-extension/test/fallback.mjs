// The fallback: a model that ignores the reminder is steered to checkpoint,
// other tools are blocked until it does, and the rollover happens with
// reason "fallback" at the end of the checkpoint's turn.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, ledger, makeFiles, msgText, say, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-fb-"));
let reads = 0;
let calls = 0;
const s = await startSession(root, {
	contextWindow: 60000,
	model: (ctx) => {
		if (++calls > 20) throw new Error("too many model calls");
		const first = msgText(ctx.messages[0]);
		if (first.includes("compacted into the following summary")) return say("Finished after the rollover.");
		const last = lastToolResult(ctx);
		const t = last ? msgText(last) : "";
		if (last?.isError && t.includes("context maintenance in progress")) {
			return call("notes", { sections: { Task: "Read all big files.", State: `read ${reads} files`, Next: "read the rest" } }, `n${calls}`);
		}
		if (last?.toolName === "notes") return say("Checkpoint written.");
		reads++;
		return call("read", { path: `big${reads}.txt` }, `r${calls}`);
	},
});
makeFiles(s.cwd, Object.fromEntries(Array.from({ length: 8 }, (_, k) => [`big${k + 1}.txt`, { tokens: 11000 }])));
await s.prompt("Read every big file.");
const journal = s.journal();
const customs = journal.filter((e) => e.type === "custom_message").map((e) => e.customType);
check(customs.includes("note-context/reminder"), `no reminder: ${customs}`);
check(customs.includes("note-context/maintenance"), `no maintenance steer: ${customs}`);
const blocked = journal.filter((e) => e.type === "message" && e.message.role === "toolResult" && e.message.isError && msgText(e.message).includes("only notes is available"));
check(blocked.length >= 1 && blocked.every((e) => e.message.toolName === "read"), `blocked calls: ${blocked.length}`);
const comps = journal.filter((e) => e.type === "compaction");
check(comps.length === 1 && comps[0].fromHook && comps[0].details.reason === "fallback", `compactions: ${JSON.stringify(comps.map((c) => [c.fromHook, c.details]))}`);
check(comps[0].summary.includes("rollover reason: fallback"), "summary reason");
const notesIdx = journal.findIndex((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "notes" && !e.message.isError);
check(notesIdx > journal.indexOf(blocked[0]), "the checkpoint came before the block");
const rows = await ledger("maintenance", s.session.sessionManager.getSessionId());
check(rows.some((r) => r.stage === "requested") && rows.some((r) => r.stage === "checkpointed"), `maintenance rows: ${JSON.stringify(rows)}`);
check(journal.some((e) => e.type === "custom_message" && e.customType === "note-context/continue"), "no continuation");
s.dispose();
console.log("fallback: ok");
