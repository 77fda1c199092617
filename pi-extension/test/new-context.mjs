// new_context refused with each blocker the model can meet (no notes; notes
// older than the cut; too little to reclaim), then accepted when the user
// asked for it, and carried out at the end of the run with reason "user".

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, ledger, makeFiles, msgText, say, scripted, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-nc-"));
const refused = (ctx, want) => {
	const m = lastToolResult(ctx);
	check(m?.toolName === "new_context" && m.isError === true && msgText(m).includes(want), `want new_context refused with "${want}", got ${JSON.stringify(m && { isError: m.isError, text: msgText(m) })}`);
};
const plan = [
	() => call("new_context", {}, "c1"),
	(ctx) => (refused(ctx, "no notebook on this branch — write notes first"), call("notes", { sections: { Task: "Compare the medium files.", Next: "read med1.txt" } }, "n1")),
	() => call("read", { path: "med1.txt" }, "r1"),
	() => call("read", { path: "med2.txt" }, "r2"),
	() => call("notes", { reviewed: true }, "n2"),
	() => call("new_context", {}, "c2"),
	(ctx) => (refused(ctx, "too little would leave the window for a rollover to help — continue working"), call("read", { path: "big1.txt" }, "r3")),
	() => call("read", { path: "big2.txt" }, "r4"),
	() => call("new_context", {}, "c3"),
	(ctx) => (refused(ctx, "notebook predates material that would be dropped — update or review notes first"), call("notes", { reviewed: true }, "n3")),
	() => call("new_context", { userRequested: true }, "c4"),
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.toolName === "new_context" && !m.isError && msgText(m).includes("rollover scheduled"), `user request not accepted: ${msgText(m)}`);
		return say("Ending the turn for the rollover.");
	},
	(ctx) => {
		const first = msgText(ctx.messages[0]);
		check(first.includes("rollover reason: user"), `new window summary: ${first.slice(0, 200)}`);
		return call("history", { windows: true }, "h1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(/^w1 start \d+ entries/m.test(t) && /^w2 hook /m.test(t), `windows: ${t}`);
		return call("history", { list: true, window: 1, roles: ["user"] }, "h2");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		const m = t.match(/\[history entry=(\w+)\] w1 user: Compare the files/);
		check(m, `list: ${t}`);
		userEntry = m[1];
		return call("history", { id: userEntry, context: 1 }, "h3");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes(`[history entry=${userEntry}] message/user`) && t.includes("after: ") && t.includes("Compare the files"), `read: ${t}`);
		return call("history", { id: userEntry, raw: true }, "h4");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes(`"id":"${userEntry}"`) && t.includes('"role":"user"'), `raw read: ${t}`);
		return call("notes", {}, "n4");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.startsWith("notebook revision 3") && t.includes("## Task\nCompare the medium files."), `notes(): ${t}`);
		return call("notes", { op: "write", name: "plan", content: "compare med and big" }, "n5");
	},
	() => call("notes", { op: "append", name: "plan", text: "then report" }, "n6"),
	() => call("notes", { op: "search", query: "report" }, "n7"),
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(/^plan @\d+ context:/m.test(t), `note search: ${t}`);
		return call("notes", { op: "read", name: "plan" }, "n8");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes("compare med and big\nthen report"), `note read: ${t}`);
		return call("notes", { op: "delete", name: "nope" }, "n9");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.isError && msgText(m).includes("nope"), `delete of a missing note: ${msgText(m)}`);
		return say("Continuing in the new window.");
	},
];
let userEntry = "";
const script = scripted(plan);
const s = await startSession(root, {
	contextWindow: 200000,
	model: script.model,
});
makeFiles(s.cwd, {
	"med1.txt": { tokens: 5000 },
	"med2.txt": { tokens: 5000 },
	"big1.txt": { tokens: 12000 },
	"big2.txt": { tokens: 12000 },
});
await s.prompt("Compare the files, and start a fresh context window once you have reviewed your notes.");
script.done();
const journal = s.journal();
const comps = journal.filter((e) => e.type === "compaction");
check(comps.length === 1 && comps[0].fromHook && comps[0].details.reason === "user", `compactions: ${JSON.stringify(comps.map((c) => c.details))}`);
const sid = s.session.sessionManager.getSessionId();
const gates = (await ledger("gate", sid)).filter((r) => !r.auto);
const blockers = gates.map((g) => (g.ok ? `ok:${g.reason}` : g.blocker));
check(JSON.stringify(blockers) === JSON.stringify(["no_notebook", "low_reclaim", "stale_notebook", "ok:user"]), `gate rows: ${JSON.stringify(blockers)}`);
s.dispose();
console.log("new-context: ok");
