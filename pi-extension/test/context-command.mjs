// /context (seed B): registered as a Pi command, it prints Pi's own context
// usage and compaction settings, the notebook and the named notes (counts,
// sizes, staleness), the branch's context windows and what is scheduled,
// without a model request. Where Pi has no UI (the SDK, print mode) the
// report goes to standard output.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, captured, check, lastToolResult, makeFiles, msgText, piVersion, say, scripted, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-ctx-"));
const plan = [
	() => call("read", { path: "a.txt" }, "r1"),
	() => call("notes", { sections: { Task: "Check /context.", Next: "run it" } }, "n1"),
	() => call("notes", { op: "write", name: "design", content: "x".repeat(120) }, "w1"),
	(ctx) => {
		check(!lastToolResult(ctx).isError, `named note write failed: ${msgText(lastToolResult(ctx))}`);
		return say("Done.");
	},
];
const script = scripted(plan);
const s = await startSession(root, { contextWindow: 60000, model: script.model });
makeFiles(s.cwd, { "a.txt": { tokens: 2000 } });
await s.prompt("Read a.txt and take notes.");
const before = s.requests.length;

// What the command prints.
const printed = await captured(() => s.prompt("/context"));
const has = (re, what) => check(re.test(printed), `/context lacks ${what}:\n${printed}`);
has(/^Context \(faux\/faux-1\)/m, "the model");
const usage = s.session.getContextUsage();
check(usage && usage.tokens != null, "Pi reports no usage");
has(new RegExp(`usage: ${usage.tokens.toLocaleString("en-US")} of 60,000 tokens`), "Pi's own usage numbers");
has(/Pi compaction: on, reserveTokens 4,000, keepRecentTokens 8,000/, "Pi's compaction settings");
has(/^Notebook: revision 1, 2 sections, \d+ bytes .*written \d+s ago/m, "the notebook");
has(/^Named notes: 1 \(120 characters\)/m, "the named-note count and size");
has(/^ {2}design: 120 characters, updated \d+s ago/m, "the named note");
has(/^Context windows: 1 on this branch/m, "the windows");
has(/^ {2}w1: started by start/m, "the first window");
has(/^Scheduled: nothing/m, "the schedule");
check(s.requests.length === before, `/context made ${s.requests.length - before} model requests`);
check(!s.entries().some((e) => JSON.stringify(e).includes("Pi compaction:")), "/context's report reached the journal");
// Pi 1.6 reports seed B's tool annotations and new_context's exposure.
if (piVersion === "1.6") {
	const tools = Object.fromEntries(s.session.getAllTools().map((t) => [t.name, t]));
	const want = {
		history: { readOnlyHint: true, openWorldHint: false },
		notes: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
		new_context: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
	};
	for (const [name, a] of Object.entries(want)) check(JSON.stringify(tools[name]?.annotations) === JSON.stringify(a), `${name} annotations: ${JSON.stringify(tools[name]?.annotations)}`);
	check(tools.new_context.exposure === "model-only" && tools.notes.exposure === "direct", `exposures: ${tools.new_context.exposure} ${tools.notes.exposure}`);
}
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("context-command: ok");
