// The history tool's pages in the default (branch) scope: the leaf moves
// with every message, and a cursor alone must still bring the next page.
// Two notes writes in one message both land.

import { fauxAssistantMessage, fauxText, fauxToolCall } from "./harness.mjs";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, msgText, say, scripted, settle, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-paging-"));
const cursorOf = (t) => /cursor "?([^"\s\]]+)/.exec(t)?.[1];
let cursor;
const plan = [
	() => say("Noted one."),
	() => say("Noted two."),
	() => say("Noted three."),
	// Two writes side by side, as a model may send them.
	() =>
		fauxAssistantMessage(
			[fauxText("writing notes"), fauxToolCall("notes", { sections: { Task: "Collect the page markers." } }, { id: "nA" }), fauxToolCall("notes", { sections: { Next: "Search for them." } }, { id: "nB" })],
			{ stopReason: "toolUse" },
		),
	() => call("notes", {}, "nRead"),
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes("## Task") && t.includes("Collect the page markers.") && t.includes("## Next") && t.includes("Search for them."), `a notes write was lost: ${t}`);
		return call("history", { query: "PageMarker", limit: 1 }, "h1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(t.includes("PageMarker alpha") && !t.includes("beta"), `first page: ${t}`);
		cursor = cursorOf(t);
		check(cursor, `no cursor on the first page: ${t}`);
		return call("history", { cursor }, "h2");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		const t = msgText(m);
		check(!m.isError && t.includes("PageMarker beta") && !t.includes("alpha"), `second page (cursor alone, the leaf moved): ${t}`);
		const next = cursorOf(t);
		check(next && next !== cursor, `no new cursor on the second page: ${t}`);
		return call("history", { query: "PageMarker", cursor: next }, "h3");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		const t = msgText(m);
		check(!m.isError && t.includes("PageMarker gamma"), `third page (query repeated with the cursor): ${t}`);
		return call("history", { cursor: "not-a-cursor-we-gave" }, "h4");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.isError && msgText(m).includes("repeat the query or list call"), `unknown cursor: ${msgText(m)}`);
		return say("Found them.");
	},
];
const script = scripted(plan);
const s = await startSession(root, {
	contextWindow: 60000,
	model: script.model,
});
await s.prompt("PageMarker alpha");
await s.prompt("PageMarker beta");
await s.prompt("PageMarker gamma");
await s.prompt("Collect what I marked.");
await settle(s.session);
script.done();
s.dispose();
console.log("paging: ok");
