// The history tool: literal search over the journal (this branch, the
// session, its lineage or every session), one entry with its neighbours, the
// branch listing and its context windows. A cursor it hands out continues
// the request it came from on its own.

import { StringEnum } from "@mariozechner/pi-ai";
import type { Static } from "typebox";
import { Type } from "typebox";
import type { Hit, Item, SearchRequest } from "./api-types.ts";
import { listPage, PAGE, readPage, searchPage, windowsPage } from "./history-pages.ts";
import { callerEntry } from "./messages.ts";
import type { ToolResult } from "./results.ts";
import { outputSchema, text, tool } from "./results.ts";
import { leafOf, push } from "./session.ts";
import type { ListQuery, Runtime } from "./state.ts";
import { HISTORY_DESCRIPTION } from "./text.ts";

const SCOPES = ["branch", "session", "lineage", "all"] as const;
const PAGINGS = ["cursor", "offset"] as const;

const historyParameters = Type.Object({
	query: Type.Optional(Type.String({ description: "literal text to find (case-sensitive unless ignoreCase; a regular expression with regex)" })),
	ignoreCase: Type.Optional(Type.Boolean({ description: "query: match letters of either case" })),
	regex: Type.Optional(Type.Boolean({ description: "query: an RE2 regular expression, matched within each entry" })),
	id: Type.Optional(Type.String({ description: "entry id to read" })),
	context: Type.Optional(Type.Integer({ minimum: 0, maximum: 20, description: "neighbours on each side (id)" })),
	list: Type.Optional(Type.Boolean()),
	windows: Type.Optional(Type.Boolean()),
	raw: Type.Optional(Type.Boolean({ description: "id: the recorded JSON line" })),
	window: Type.Optional(Type.Integer({ minimum: 1 })),
	scope: Type.Optional(StringEnum(SCOPES)),
	session: Type.Optional(Type.String({ description: "id: the session holding the entry (from a search hit)" })),
	roles: Type.Optional(Type.Array(Type.String())),
	types: Type.Optional(Type.Array(Type.String())),
	limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
	offset: Type.Optional(Type.Integer({ minimum: 0, description: "id: character offset" })),
	cursor: Type.Optional(Type.String({ description: "next page of a query or list: the cursor it gave (enough on its own)" })),
	paging: Type.Optional(StringEnum(PAGINGS)),
});

/** The arguments of a history call (scope typed from SCOPES: TypeBox cannot see through StringEnum; Pi checks the arguments against the schema). */
type HistoryParams = Omit<Static<typeof historyParameters>, "scope" | "paging"> & {
	scope?: (typeof SCOPES)[number];
	paging?: (typeof PAGINGS)[number];
};

/** Registers the history tool. */
export function registerHistory(rt: Runtime): void {
	rt.pi.registerTool({
		name: "history",
		label: "History",
		description: HISTORY_DESCRIPTION,
		// Seed B: history only reads, in a closed world (the session journals).
		annotations: { readOnlyHint: true, openWorldHint: false },
		outputSchema,
		parameters: historyParameters,
		async execute(toolCallId, args, signal, _onUpdate, ctx) {
			const p = args as HistoryParams;
			return tool(rt, async () => {
				await push(rt, ctx);
				const leaf = leafOf(ctx);
				const self = callerEntry(ctx, toolCallId);
				if (p.paging === "offset") return byOffset(rt, leaf, self, p, signal);
				if (p.id) return readEntry(rt, p.id, p, signal);
				const prior = p.cursor ? rt.S.cursors.get(p.cursor) : undefined;
				if (p.query || prior?.kind === "search") return search(rt, leaf, self, p, prior?.kind === "search" ? prior.req : undefined, signal);
				if (p.windows) {
					const r = await rt.api.call("GET /v1/sessions/{id}/windows", { path: { id: rt.S.sid }, query: { leaf, allowlisted: true }, signal });
					const out = r.windows.map((w) => `w${w.window} ${w.startedBy} ${w.entries} entries [history entry=${w.firstEntry}] … [history entry=${w.lastEntry}]`);
					return text(rt, out.join("\n"), r);
				}
				if (p.list || prior?.kind === "list") return list(rt, leaf, p, prior?.kind === "list" ? prior.req : undefined, signal);
				if (p.cursor) throw new Error("history: this cursor was not handed out in this session (or is too old to be remembered); repeat the query or list call that gave it, with the cursor");
				throw new Error("history needs one of query, id, list, windows or cursor");
			});
		},
	});
}

/** history with paging offset (seed B's pages): the same calls, paged by position. */
async function byOffset(rt: Runtime, leaf: string, self: string | undefined, p: HistoryParams, signal: AbortSignal | undefined): Promise<ToolResult> {
	if (p.cursor) throw new Error("history: paging offset pages by offset, not cursor; give the offset the last page named, or drop paging to continue with the cursor");
	if (p.limit !== undefined) throw new Error(`history: paging offset has pages of ${PAGE}; drop limit (or drop paging to choose the page size)`);
	if (p.id) return readPage(rt, p.id, p, signal);
	if (p.query) return searchPage(rt, leaf, self, p, hitLine(rt), signal);
	if (p.windows) return windowsPage(rt, leaf, p, signal);
	if (p.list) return listPage(rt, leaf, p, signal);
	throw new Error("history needs one of query, id, list or windows");
}

/** history {id}: one entry (of this session, or of session) with its neighbours. */
async function readEntry(rt: Runtime, id: string, p: HistoryParams, signal: AbortSignal | undefined): Promise<ToolResult> {
	const sid = p.session || rt.S.sid;
	const r = await rt.api.call("GET /v1/sessions/{id}/entries/{entry}", {
		path: { id: sid, entry: id },
		query: { context: p.context ?? 1, offset: p.offset, raw: p.raw, allowlisted: true },
		signal,
	});
	const out: string[] = [];
	for (const it of r.before ?? []) out.push(`  before: ${itemLine(it)}`);
	out.push(`${r.ref} ${r.item.type}${r.item.role ? `/${r.item.role}` : ""}${r.item.toolName ? ` (${r.item.toolName})` : ""} w${r.item.window} ${r.item.timestamp}`);
	out.push(r.text);
	if (r.nextOffset) out.push(`[${r.totalChars} characters; continue with offset ${r.nextOffset}]`);
	for (const it of r.after ?? []) out.push(`  after: ${itemLine(it)}`);
	return text(rt, out.join("\n"), { entry: r.item.entry });
}

/**
 * history {query}: literal search. A cursor continues the request it came
 * from (prior), unless the call names another needle: the service then
 * says the cursor does not fit.
 */
async function search(
	rt: Runtime,
	leaf: string,
	self: string | undefined,
	p: HistoryParams,
	prior: SearchRequest | undefined,
	signal: AbortSignal | undefined,
): Promise<ToolResult> {
	const sid = rt.S.sid;
	const same = prior !== undefined && (!p.query || p.query === prior.needle);
	const asked = p.scope || "branch";
	const body: SearchRequest =
		same && prior
			? { ...prior, cursor: p.cursor }
			: {
					needle: p.query ?? "",
					scope: asked,
					session: asked === "all" ? undefined : sid,
					leaf: asked === "branch" ? leaf : undefined,
					window: p.window,
					roles: p.roles,
					types: p.types,
					limit: p.limit ?? 10,
					cursor: p.cursor,
					budget: 6000,
					ignoreCase: p.ignoreCase || undefined,
					regex: p.regex || undefined,
				};
	const scope = body.scope;
	const r = await rt.api.call("POST /v1/search", { body, signal });
	if (r.cursor) rt.remember(r.cursor, { kind: "search", req: { ...body, cursor: undefined } });
	const hits = (r.hits ?? []).filter((h) => !(h.entry === self && h.session === rt.S.sid));
	const out = hits.map(hitLine(rt));
	if (out.length === 0) out.push(`No entry contains ${JSON.stringify(body.needle)} in scope ${scope}${filtersNote(body)}.`);
	if (r.cursor) out.push(`[more hits: call history with cursor "${r.cursor}"]`);
	const matches = hits.map((h) => ({ ref: h.ref, entry: h.entry, session: h.session, agent: h.agent }));
	return text(rt, out.join("\n"), { hits: hits.length, matches, cursor: r.cursor });
}

/** history {list}: the branch in order, a page at a time; a cursor continues the listing it came from (prior). */
async function list(rt: Runtime, leaf: string, p: HistoryParams, prior: ListQuery | undefined, signal: AbortSignal | undefined): Promise<ToolResult> {
	const query: ListQuery = prior
		? { ...prior, cursor: p.cursor }
		: { leaf, window: p.window, roles: csv(p.roles), types: csv(p.types), limit: p.limit ?? 50, cursor: p.cursor, allowlisted: true };
	const r = await rt.api.call("GET /v1/sessions/{id}/entries", { path: { id: rt.S.sid }, query, signal });
	if (r.cursor) rt.remember(r.cursor, { kind: "list", req: { ...query, cursor: undefined } });
	const out = r.items.map(itemLine);
	if (r.cursor) out.push(`[${r.total} entries; next page: call history with cursor "${r.cursor}"]`);
	return text(rt, out.join("\n") || "No entries.", { total: r.total, cursor: r.cursor });
}

/** A list query parameter: comma-separated (the service also takes it repeated). */
function csv(values: string[] | undefined): string | undefined {
	return values?.join(",");
}

/** The filters of a search, for a message that says nothing matched under them. */
function filtersNote(b: SearchRequest): string {
	const f: string[] = [];
	if (b.window) f.push(`window ${b.window}`);
	if (b.roles?.length) f.push(`roles ${b.roles.join(",")}`);
	if (b.types?.length) f.push(`types ${b.types.join(",")}`);
	return f.length ? ` with ${f.join(", ")} (try without them)` : "";
}

/** One search hit as the model reads it. */
function hitLine(rt: Runtime): (h: Hit) => string {
	const sid = rt.S.sid;
	return (h) => {
		const who = h.role ? h.role : h.type;
		const snip = (h.snippets ?? []).map((s) => s.text.replace(/\s+/g, " ")).join(" … ");
		// A hit of another session (lineage scope) names it and its agent,
		// so history {id, session} reads it.
		const where = h.session !== sid ? ` session=${h.session}${h.agent ? ` agent=${h.agent}` : ""}` : "";
		return `${h.ref} w${h.window} ${who}${h.toolName ? `(${h.toolName})` : ""}${where}: ${snip}`;
	};
}

const itemLine = (it: Item): string => `[history entry=${it.entry}] w${it.window} ${it.preview}`;
