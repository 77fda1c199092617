// Seed B's transcript previews on Pi 1.6: a named-note write and a Handoff
// show their text while the fake model streams the tool-call arguments
// (Pi's own argument parser, as for real providers), drawn by Pi's own
// ToolExecutionComponent fed as the interactive mode feeds it. Collapsed,
// the preview is at most eight lines, heading and omission line included,
// and ends with the newest text; expanded, it is the whole text; once the
// call is done it stays.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, makeFiles, msgText, piVersion, say, scripted, startSession } from "./harness.mjs";

// Pi 0.73.1's fake model hands over a tool call's arguments whole, so only
// Pi 1.6's shows them growing.
if (piVersion !== "1.6") {
	console.log("previews: Pi 1.6 only");
	process.exit(0);
}
// The Pi package the session runs on (the same module, so the same theme).
const pi = await import("./pi16/node_modules/@earendil-works/pi-coding-agent/dist/index.js");
pi.initTheme();

const WIDTH = 72;
const PLAN = Array.from({ length: 30 }, (_, i) => `line ${i + 1} of the plan`).join("\n");
const HANDOFF = Array.from({ length: 30 }, (_, i) => `handoff step ${i + 1}: where it stands`).join("\n");
const plain = (s) => s.replace(/\x1b\[[0-9;]*m/g, "").replace(/\x1b\][^\x07]*\x07/g, "").trimEnd();

const root = mkdtempSync(join(tmpdir(), "pih-previews-"));
const plan = [
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("notes", { sections: { Task: "Compare the files.", Next: "compare big1 and big2" } }, "n1"),
	() => call("notes", { op: "write", name: "plan", content: PLAN }, "w1"),
	() => call("new_context", { userRequested: true, handoff: HANDOFF }, "c1"),
	(ctx) => {
		check(!lastToolResult(ctx).isError && msgText(lastToolResult(ctx)).includes("Handoff saved"), `new_context: ${msgText(lastToolResult(ctx))}`);
		return say("Rolling over.");
	},
	() => say("Continuing."),
];
const script = scripted(plan);
const s = await startSession(root, { contextWindow: 200000, model: script.model });
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 } });

// The interactive mode's wiring of a tool row, on Pi's own component.
const ui = { requestRender() {} };
const rows = new Map(); // tool call id → { row, frames: [{ lines, args }] }
s.session.subscribe((ev) => {
	if (ev.type === "message_update" && ev.message.role === "assistant") {
		for (const c of ev.message.content) {
			if (c.type !== "toolCall" || (c.name !== "notes" && c.name !== "new_context")) continue;
			let r = rows.get(c.id);
			if (!r) {
				r = { row: new pi.ToolExecutionComponent(c.name, c.id, c.arguments, {}, s.session.getToolDefinition(c.name), ui, s.cwd), frames: [] };
				rows.set(c.id, r);
			} else r.row.updateArgs(c.arguments);
			r.frames.push({ lines: r.row.render(WIDTH).map(plain), args: structuredClone(c.arguments) });
		}
	} else if (ev.type === "message_end" && ev.message.role === "assistant") {
		for (const c of ev.message.content) if (c.type === "toolCall") rows.get(c.id)?.row.setArgsComplete();
	} else if (ev.type === "tool_execution_end") {
		rows.get(ev.toolCallId)?.row.updateResult({ ...ev.result, isError: ev.isError });
	}
});

await s.prompt("Plan the comparison, then start a fresh context window with a handoff.");
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);

/** The call's lines of a streaming frame: Pi's row is a spacer, the box's top padding, the call, the bottom padding. */
const callLines = (lines) => lines.slice(2, -1);

function checkStreaming(id, field, heading) {
	const r = rows.get(id);
	check(r, `no row for ${id}`);
	const streamed = r.frames.filter((f) => typeof f.args[field] === "string" && f.args[field].length > 0);
	const sizes = new Set(streamed.map((f) => f.args[field].length));
	check(sizes.size >= 5, `${id}: the ${field} argument did not stream (${sizes.size} distinct sizes)`);
	let omitted = 0;
	for (const f of streamed) {
		const lines = callLines(f.lines);
		check(lines.length <= 8, `${id}: a collapsed preview of ${lines.length} lines:\n${lines.join("\n")}`);
		check(lines[0].includes(heading), `${id}: heading ${JSON.stringify(lines[0])}, want one with ${heading}`);
		// The newest text is on the last line.
		const text = f.args[field].trimEnd();
		const newest = text.slice(text.lastIndexOf("\n") + 1).trim();
		check(lines.at(-1).trim().endsWith(newest.slice(-20)), `${id}: the preview does not end with the newest text ${JSON.stringify(newest)}:\n${lines.join("\n")}`);
		if (lines.some((l) => /… \d+ earlier lines?/.test(l))) omitted++;
	}
	return { r, omitted };
}

const w = checkStreaming("w1", "content", "notes write plan");
check(w.omitted > 0, "w1: a 30-line note never showed the omission line");
// Done: the preview stays (collapsed: the end of the note, not its start).
let done = w.r.row.render(WIDTH).map(plain);
check(done.some((l) => l.includes("notes write plan")) && done.some((l) => l.includes("line 30 of the plan")) && !done.some((l) => l.includes("line 1 of the plan")),
	`w1 once written:\n${done.join("\n")}`);
w.r.row.setExpanded(true);
done = w.r.row.render(WIDTH).map(plain);
check(done.some((l) => /line 1 of the plan$/.test(l)) && done.some((l) => l.includes("line 30 of the plan")), `w1 expanded:\n${done.join("\n")}`);

// A notebook write previews its sections (short: no omission line).
const n = rows.get("n1").row.render(WIDTH).map(plain);
check(n.some((l) => l.includes("notes sections Task, Next")) && n.some((l) => l === "## Next" || l.endsWith("## Next")) && n.some((l) => l.includes("compare big1 and big2")), `n1:\n${n.join("\n")}`);

const c = checkStreaming("c1", "handoff", "new_context");
check(c.r.frames.some((f) => callLines(f.lines)[0].includes("writing a Handoff")), "c1: never said it was writing a Handoff");
done = c.r.row.render(WIDTH).map(plain);
check(done.some((l) => l.includes("rollover requested with a Handoff")) && done.some((l) => l.includes("handoff step 30:")), `c1 once requested:\n${done.join("\n")}`);
s.dispose();
console.log(`previews: ok (${w.r.frames.length} and ${c.r.frames.length} frames)`);
