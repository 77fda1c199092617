// Seed B's paging of the history tool (paging: "offset"): a list, a search
// or the windows a page of 20 at a time with the next page's offset, and one
// entry's recorded JSON 2,000 characters at a time. Cursor paging stays the
// default; both ask the same service. A list page is asked by position (the
// service counts the filtered entries); a search has only cursors, so the
// cursor that continues at each handed-out offset is kept, and an offset
// without one is reached by paging from the start.

import type { Hit, SearchRequest } from "./api-types.ts";
import type { ToolResult } from "./results.ts";
import { footer, text } from "./results.ts";
import type { Runtime } from "./state.ts";

/** Items per page, and characters of entry JSON per read (seed B). */
export const PAGE = 20;
export const READ_CHARS = 2000;

/** The arguments the offset pages read (a subset of history's). */
export interface PageParams {
	query?: string;
	ignoreCase?: boolean;
	regex?: boolean;
	window?: number;
	scope?: SearchRequest["scope"];
	session?: string;
	roles?: string[];
	types?: string[];
	offset?: number;
}

/** history {id, paging: "offset"}: the entry's recorded JSON from offset, at most READ_CHARS characters. */
export async function readPage(rt: Runtime, id: string, p: PageParams, signal: AbortSignal | undefined): Promise<ToolResult> {
	const sid = p.session || rt.S.sid;
	const r = await rt.api.call("GET /v1/sessions/{id}/entries/{entry}", {
		path: { id: sid, entry: id },
		query: { context: 0, offset: p.offset, length: READ_CHARS, raw: true, allowlisted: true },
		signal,
	});
	const next = r.nextOffset ?? null;
	const head = `${r.ref} ${r.item.type}${r.item.role ? `/${r.item.role}` : ""} w${r.item.window} recorded JSON, characters ${r.offset}–${next ?? r.totalChars} of ${r.totalChars}`;
	const more = next != null ? `\n[next page: offset ${next}]` : "";
	return text(rt, `${head}\n${r.text}${more}`, {
		ref: r.ref,
		resolvedInSession: sid,
		format: "json",
		content: r.text,
		offset: r.offset,
		totalCharacters: r.totalChars,
		nextOffset: next,
	});
}

/** history {list, paging: "offset"}: a page of the branch's entries from offset. */
export async function listPage(rt: Runtime, leaf: string, p: PageParams, signal: AbortSignal | undefined): Promise<ToolResult> {
	const r = await rt.api.call("GET /v1/sessions/{id}/entries", {
		path: { id: rt.S.sid },
		query: { leaf, window: p.window, roles: p.roles?.join(","), types: p.types?.join(","), limit: PAGE, offset: p.offset || undefined, allowlisted: true },
		signal,
	});
	const next = r.nextOffset ?? null;
	const items = r.items.map((it) => ({ ref: `[history entry=${it.entry}]`, type: it.type, role: it.role, timestamp: it.timestamp, preview: it.preview }));
	const lines = r.items.map((it) => `[history entry=${it.entry}] w${it.window} ${it.preview}`);
	return text(rt, (lines.join("\n") || "No entries at this offset.") + footer(r.total, next), { items, total: r.total, nextOffset: next });
}

/** history {windows, paging: "offset"}: a page of the branch's context windows. */
export async function windowsPage(rt: Runtime, leaf: string, p: PageParams, signal: AbortSignal | undefined): Promise<ToolResult> {
	const r = await rt.api.call("GET /v1/sessions/{id}/windows", { path: { id: rt.S.sid }, query: { leaf, allowlisted: true }, signal });
	const off = p.offset ?? 0;
	const page = r.windows.slice(off, off + PAGE);
	const next = off + PAGE < r.windows.length ? off + PAGE : null;
	const windows = page.map((w) => ({ ref: `[history entry=${w.firstEntry}]`, window: w.window, items: w.entries, startedBy: w.startedBy }));
	const lines = page.map((w) => `w${w.window} ${w.startedBy} ${w.entries} entries [history entry=${w.firstEntry}] … [history entry=${w.lastEntry}]`);
	return text(rt, (lines.join("\n") || "No windows at this offset.") + footer(r.windows.length, next), { windows, total: r.windows.length, nextOffset: next });
}

/** Where a search continues: the request that gave a cursor, by search and position. */
type Memo = Map<string, { req: SearchRequest; cursor: string }>;
const memos = new WeakMap<object, Memo>();
const maxMemo = 50;

/**
 * history {query, paging: "offset"}: the hits from offset, PAGE of them.
 * self is the caller's own tool-call entry, left out of the page.
 */
export async function searchPage(
	rt: Runtime,
	leaf: string,
	self: string | undefined,
	p: PageParams,
	line: (h: Hit) => string,
	signal: AbortSignal | undefined,
): Promise<ToolResult> {
	const S = rt.S;
	const sid = S.sid;
	const off = p.offset ?? 0;
	const scope = p.scope || "branch";
	const fresh: SearchRequest = {
		needle: p.query ?? "",
		scope,
		session: scope === "all" ? undefined : sid,
		leaf: scope === "branch" ? leaf : undefined,
		window: p.window,
		roles: p.roles,
		types: p.types,
		limit: PAGE,
		budget: 6000,
		ignoreCase: p.ignoreCase || undefined,
		regex: p.regex || undefined,
	};
	// The leaf moves with every message; the search is the same one.
	const key = JSON.stringify({ ...fresh, leaf: undefined });
	let memo = memos.get(S);
	if (!memo) memos.set(S, (memo = new Map()));
	const known = memo.get(`${key}#${off}`);
	const req = known ? known.req : fresh;
	let cursor = known?.cursor;
	let pos = known ? off : 0;
	const got: Hit[] = [];
	for (;;) {
		const r = await rt.api.call("POST /v1/search", { body: { ...req, cursor }, signal });
		const hits = r.hits ?? [];
		hits.forEach((h, i) => {
			if (pos + i >= off && pos + i < off + PAGE) got.push(h);
		});
		pos += hits.length;
		cursor = r.cursor;
		if (cursor) {
			memo.set(`${key}#${pos}`, { req, cursor });
			while (memo.size > maxMemo) memo.delete(memo.keys().next().value as string);
		}
		if (!cursor || pos >= off + PAGE) break;
	}
	const next = pos > off + PAGE || (cursor && pos >= off + PAGE) ? off + PAGE : null;
	const shown = got.filter((h) => !(h.entry === self && h.session === sid));
	const matches = shown.map((h) => ({
		ref: h.ref,
		entry: h.entry,
		session: h.session,
		agent: h.agent,
		preview: (h.snippets ?? []).map((s) => s.text.replace(/\s+/g, " ")).join(" … "),
	}));
	const out = shown.map(line);
	if (out.length === 0) out.push(off > 0 ? `No more hits at offset ${off}.` : `No entry contains ${JSON.stringify(fresh.needle)} in scope ${scope}.`);
	if (next != null) out.push(`[next page: offset ${next}]`);
	return text(rt, out.join("\n"), { matches, nextOffset: next });
}
