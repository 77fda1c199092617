// The lineage scope through agents (seed B): this session was spawned by a
// parent agent and spawned a helper of its own, as a subagent extension
// records it (agent-lineage/parent in the child, agent-lineage/child in the
// parent). notes and history in the lineage scope reach the parent's and
// the helper's notes and entries, each naming its session and agent, and
// not the parent's other child; refs from them read and copy.

import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, ext, lastToolResult, msgText, say, scripted, sleep, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-lineage-"));
const sessions = process.env.PI_SESSIONS_DIR || join(root, "sessions");
const dir = join(sessions, "--lineage-agents--");
mkdirSync(dir, { recursive: true });

/** A journal another agent wrote: a user message, records, a named note. */
function other(sid, note, records) {
	const at = "2026-12-06T10:00:00.000Z";
	const lines = [{ type: "session", version: 3, id: sid, timestamp: at, cwd: root }];
	let parent = null;
	const add = (e) => {
		const id = `${sid.slice(0, 4)}${String(lines.length).padStart(4, "0")}`;
		lines.push({ ...e, id, parentId: parent, timestamp: at });
		parent = id;
	};
	add({ type: "message", message: { role: "user", content: `LineageMarker from ${sid}`, timestamp: 0 } });
	for (const [customType, data] of records) add({ type: "custom", customType, data });
	add({ type: "custom", customType: "note-context/note", data: { version: 1, op: "write", name: note, content: `${note} written by ${sid}` } });
	writeFileSync(join(dir, `${sid}.jsonl`), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
}

let refs = {};
const plan = [
	() => call("notes", { op: "list", scope: "lineage" }, "l1"),
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		for (const [name, who] of [["goal", "session=aaaa-parent agent=root"], ["deep", "session=cccc-helper agent=helper"], ["mine", ""]]) {
			const line = t.split("\n").find((l) => l.startsWith(`${name} `));
			check(line && line.includes(who), `lineage notes: ${name} should say ${who || "nothing of its session"}:\n${t}`);
			refs[name] = /(context:\S+)/.exec(line)?.[1];
		}
		check(!t.includes("sibling-note"), `lineage notes list the sibling's note:\n${t}`);
		return call("notes", { op: "read", ref: refs.deep }, "r1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes("deep written by cccc-helper"), `read by ref from the helper: ${t}`);
		return call("notes", { op: "copy", ref: refs.goal, scope: "lineage" }, "c1");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(!m.isError && msgText(m).includes('"name":"goal"'), `copy by ref from the parent: ${msgText(m)}`);
		return call("history", { query: "LineageMarker from", scope: "lineage" }, "h1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(/session=aaaa-parent agent=root/.test(t) && /session=cccc-helper agent=helper/.test(t) && !t.includes("bbbb-sibling"), `lineage search:\n${t}`);
		const hit = /\[history entry=(\w+)\] w\d+ user session=aaaa-parent/.exec(t);
		check(hit, `no hit of the parent's message:\n${t}`);
		return call("history", { id: hit[1], session: "aaaa-parent" }, "h2");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes("LineageMarker from aaaa-parent"), `read of the parent's entry: ${t}`);
		return say("Done.");
	},
];
const script = scripted(plan);
const s = await startSession(root, { contextWindow: 60000, model: script.model });
const me = s.session.sessionManager.getSessionId();
// What a subagent extension writes: the child names its parent, the parent its children.
other("aaaa-parent", "goal", [
	["agent-lineage/child", { version: 1, childSession: me, agent: "worker" }],
	["agent-lineage/child", { version: 1, childSession: "bbbb-sibling", agent: "sibling" }],
]);
other("bbbb-sibling", "sibling-note", [["agent-lineage/parent", { version: 1, parentSession: "aaaa-parent", agent: "sibling", parentAgent: "root" }]]);
other("cccc-helper", "deep", [["agent-lineage/parent", { version: 1, parentSession: me, agent: "helper", parentAgent: "worker" }]]);
s.session.sessionManager.appendCustomEntry("agent-lineage/parent", { version: 1, parentSession: "aaaa-parent", agent: "worker", parentAgent: "root" });
s.session.sessionManager.appendCustomEntry("agent-lineage/child", { version: 1, childSession: "cccc-helper", agent: "helper" });
s.session.sessionManager.appendCustomEntry("note-context/note", { version: 1, op: "write", name: "mine", content: "this agent's own note" });
// The service imports the other journals from the sessions directory it watches.
for (let i = 0; ; i++) {
	const r = await ext()
		.service.request("GET", "/v1/sessions")
		.catch(() => ({ sessions: [] }));
	const ids = new Set((r.sessions ?? []).map((x) => x.id));
	if (["aaaa-parent", "bbbb-sibling", "cccc-helper"].every((id) => ids.has(id))) break;
	check(i < 100, `the service did not import the other agents' journals: ${[...ids].join(", ")}`);
	await sleep(100);
}
await s.prompt("Gather what the agents around you found.");
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("lineage: ok");
