// The history tool's seed B paging (paging: "offset"): a search and a list
// a page of 20 at a time, each naming the next offset; the windows as one
// page; an entry's recorded JSON 2,000 characters per read from an offset.
// A cursor or a limit beside paging offset is refused; cursor paging stays.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { call, check, lastToolResult, msgText, piVersion, say, scripted, settle, startSession, toolResults } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-paging-offset-"));
const MARKERS = 23;
const nextOf = (t) => Number(/next page: offset (\d+)/.exec(t)?.[1] ?? NaN);
const ids = (t) => [...t.matchAll(/\[history entry=(\w+)\]/g)].map((m) => m[1]);
let firstPage = [];
let longId;
const plan = [
	...Array.from({ length: MARKERS + 1 }, () => () => say("ok")),
	() => call("history", { query: "OffsetMarker", paging: "offset" }, "s1"),
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		firstPage = ids(t);
		check(firstPage.length === 20 && nextOf(t) === 20, `first search page: 20 hits and next offset 20, got ${firstPage.length}: ${t}`);
		return call("history", { query: "OffsetMarker", paging: "offset", offset: 20 }, "s2");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		const second = ids(t);
		// 23 user messages, and the first call's own request now (its query is text).
		check(second.length === 4 && !second.some((id) => firstPage.includes(id)) && !/next page/.test(t), `second search page: ${t}`);
		return call("history", { list: true, paging: "offset" }, "l1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(ids(t).length === 20 && nextOf(t) === 20 && /in all/.test(t), `first list page: ${t}`);
		return call("history", { list: true, paging: "offset", offset: 20, roles: ["user"] }, "l2");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		// The markers, the long message and the last prompt: 25 user messages.
		check(ids(t).length === MARKERS + 2 - 20 && !/next page/.test(t), `second page of the user messages: ${t}`);
		longId = /\[history entry=(\w+)\] w1 user: The long one/.exec(t)?.[1];
		return call("history", { id: longId, paging: "offset" }, "r1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		const body = t.split("\n")[1] ?? "";
		check(body.startsWith('{"type":"message"') && body.length === 2000 && nextOf(t) === 2000, `first read page (recorded JSON, 2,000 characters): ${t.slice(0, 300)}`);
		return call("history", { id: longId, paging: "offset", offset: 2000 }, "r2");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(/characters 2000–4000 of \d+/.test(t), `second read page: ${t.slice(0, 200)}`);
		return call("history", { windows: true, paging: "offset" }, "w1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(/^w1 start/.test(t) && !/\nw2 /.test(t) && !/next page/.test(t), `windows page (one window, no next page): ${t}`);
		return call("history", { list: true, paging: "offset", cursor: "c" }, "e1");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.isError && msgText(m).includes("not cursor"), `cursor with paging offset: ${msgText(m)}`);
		return call("history", { list: true, paging: "offset", limit: 5 }, "e2");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.isError && msgText(m).includes("pages of 20"), `limit with paging offset: ${msgText(m)}`);
		// Cursor paging is still the default.
		return call("history", { list: true, limit: 5 }, "c1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(ids(t).length === 5 && /cursor "/.test(t), `cursor paging: ${t}`);
		return say("Paged.");
	},
];
const script = scripted(plan);
const s = await startSession(root, { contextWindow: 200000, model: script.model, after: [join(dirname(fileURLToPath(import.meta.url)), "observer.ts")] });
for (let i = 1; i <= MARKERS; i++) await s.prompt(`OffsetMarker ${i}`);
await s.prompt(`The long one: ${"0123456789".repeat(600)}`);
await s.prompt("Page through them.");
await settle(s.session);
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);

// The details (and on Pi 1.6 the structured content) have seed B's shapes.
const results = toolResults(s.entries(), "history");
const byId = (id) => results.find((r) => r.toolCallId === id);
const list = byId("l1").details;
check(list.items.length === 20 && list.nextOffset === 20 && list.total > 20 && list.items[0].ref.startsWith("[history entry="), `list details: ${JSON.stringify(list).slice(0, 300)}`);
const read = byId("r1").details;
check(read.format === "json" && read.content.length === 2000 && read.offset === 0 && read.nextOffset === 2000 && read.totalCharacters > 6000, `read details: ${JSON.stringify({ ...read, content: undefined })}`);
const search = byId("s2").details;
check(search.matches.length === 4 && search.nextOffset === null && search.matches.every((m) => m.session && m.ref), `search details: ${JSON.stringify(search)}`);
if (piVersion === "1.6") {
	// What a codemode script receives: the details snake_cased.
	const seen = globalThis[Symbol.for("pi-history.test.results")].filter((r) => r.toolName === "history" && r.details?.items);
	const sc = seen[0]?.structuredContent;
	check(sc?.next_offset === 20 && sc.items.length === 20, `list structuredContent: ${JSON.stringify(sc ?? null).slice(0, 200)}`);
}
s.dispose();
console.log("paging-offset: ok");
