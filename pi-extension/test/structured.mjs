// Pi 1.6's tool interfaces: notes and history return structuredContent
// (snake_case fields for scripts) beside the text the model reads; a refusal
// is an isError result that keeps its details; the status line added to
// another tool's result keeps that tool's structuredContent (read declares
// one). On Pi 0.73.1, which has none of this, the script only checks that
// refusals still reach the model as errors.

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { call, check, lastToolResult, makeFiles, msgText, piVersion, say, scripted, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-struct-"));
// A status step small enough for the first read to get the status line (the
// service reads its configuration again when the file changes).
writeFileSync(join(process.env.PI_HISTORY_DATA, "note-context.json"), JSON.stringify({ statusStepTokens: 100 }));
const results = () => globalThis[Symbol.for("pi-history.test.results")];
const plan = [
	() => call("read", { path: "a.txt" }, "r1"),
	(ctx) => {
		check(msgText(lastToolResult(ctx)).includes("[note-context]"), `no status line on the read result: ${msgText(lastToolResult(ctx))}`);
		return call("new_context", {}, "c1");
	},
	(ctx) => {
		check(lastToolResult(ctx).isError, "the new_context refusal is not an error result");
		return call("notes", { sections: { Task: "check the structured results" } }, "n1");
	},
	() => call("history", { query: "structured results" }, "h1"),
	(ctx) => {
		check(/\[history entry=\w+\]/.test(msgText(lastToolResult(ctx))), `history text: ${msgText(lastToolResult(ctx))}`);
		return say("Done.");
	},
];
const script = scripted(plan);
const s = await startSession(root, {
	contextWindow: 60000,
	model: script.model,
	after: [join(dirname(fileURLToPath(import.meta.url)), "observer.ts")],
});
makeFiles(s.cwd, { "a.txt": { tokens: 400, marker: "hello" } });
await s.prompt("Check the tools.");
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);

const by = (name) => results().filter((r) => r.toolName === name);
if (piVersion === "1.6") {
	const [read] = by("read");
	check(read.text.includes("[note-context]"), "the observer did not see the status line");
	check(read.structuredContent !== undefined, "the status line dropped read's structuredContent");
	const [nc] = by("new_context");
	check(nc.isError && nc.structuredContent?.error && nc.details?.error, `new_context refusal: ${JSON.stringify(nc)}`);
	const [notes] = by("notes");
	const sc = notes.structuredContent;
	check(!notes.isError && sc?.revision === 1 && typeof sc.tokens_estimate === "number" && typeof sc.remaining_bytes === "number" && sc.tokensEstimate === undefined, `notes structuredContent: ${JSON.stringify(sc)}`);
	check(notes.details?.tokensEstimate === sc.tokens_estimate, "the notes details lost their camelCase shape");
	const [hist] = by("history");
	check(hist.structuredContent?.hits >= 1, `history structuredContent: ${JSON.stringify(hist.structuredContent)}`);
}
s.dispose();
console.log("structured: ok");
