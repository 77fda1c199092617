// The notes and new_context tools: the branch's notebook and named notes
// (validated by the service, appended by the extension as custom entries so
// they live in the journal and follow /tree), and the model's request for a
// new context window.

import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { StringEnum } from "@mariozechner/pi-ai";
import type { Static } from "typebox";
import { Type } from "typebox";
import type { NotebookWriteRequest } from "./api-types.ts";
import { batchSize, callerEntry } from "./messages.ts";
import type { ToolResult } from "./results.ts";
import { footer, outputSchema, text, tool } from "./results.ts";
import { ApiError } from "./service.ts";
import { event, leafOf, push } from "./session.ts";
import type { Runtime } from "./state.ts";
import { NEW_CONTEXT_DESCRIPTION, NOTES_DESCRIPTION } from "./text.ts";
import { renderNewContextCall, renderNotesCall } from "./previews.ts";

/**
 * Seed B's MCP annotations of notes and new_context (Pi 1.6 reports them
 * through getAllTools and sends them to no provider): a closed world, not
 * read-only, non-destructive (a write or a Handoff is appended; earlier
 * values stay readable through history) and not idempotent.
 */
const WRITES_ANNOTATIONS = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

const NOTE_OPS = ["list", "read", "write", "append", "delete", "copy", "search", "revisions"] as const;
const NOTE_SCOPES = ["branch", "lineage"] as const;

const notesParameters = Type.Object({
	sections: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "sections to replace; \"\" deletes one" })),
	replaceAll: Type.Optional(Type.Boolean({ description: "sections become the whole notebook" })),
	reviewed: Type.Optional(Type.Boolean({ description: "the current revision was reviewed and needs no change" })),
	expectedRevision: Type.Optional(Type.Integer({ minimum: 0, description: "fail unless this is the current revision" })),
	op: Type.Optional(StringEnum(NOTE_OPS, { description: "a named-note operation" })),
	name: Type.Optional(Type.String({ description: "note name" })),
	content: Type.Optional(Type.String({ description: "write: the note's new content" })),
	text: Type.Optional(Type.String({ description: "append: text to add" })),
	ref: Type.Optional(Type.String({ description: "read/copy: a reference context:<session>:<entry>" })),
	query: Type.Optional(Type.String({ description: "search: literal text" })),
	offset: Type.Optional(Type.Integer({ minimum: 0 })),
	limit: Type.Optional(Type.Integer({ minimum: 1 })),
	scope: Type.Optional(StringEnum(NOTE_SCOPES)),
});

/**
 * The arguments of a notes call. TypeBox cannot see through StringEnum (a
 * plain JSON schema on Pi 1.6), so its members are typed here from the same
 * lists; Pi checks the arguments against the schema before execute runs.
 */
type NotesParams = Omit<Static<typeof notesParameters>, "op" | "scope"> & {
	op?: (typeof NOTE_OPS)[number];
	scope?: (typeof NOTE_SCOPES)[number];
};

/** Registers the notes tool. */
export function registerNotes(rt: Runtime): void {
	rt.pi.registerTool({
		name: "notes",
		label: "Notes",
		description: NOTES_DESCRIPTION,
		annotations: WRITES_ANNOTATIONS,
		// Each write builds on the revision before it: two writes in one
		// message, run side by side, would both build on the same one and
		// the second would drop the first's sections.
		executionMode: "sequential",
		outputSchema,
		parameters: notesParameters,
		// Seed B: a write's text shows as the model writes it.
		renderCall: renderNotesCall,
		async execute(toolCallId, args, signal, _onUpdate, ctx) {
			const params = args as NotesParams;
			return tool(rt, async () => {
				await push(rt, ctx);
				const leaf = leafOf(ctx);
				const sid = rt.S.sid;
				if (params.op) return namedNote(rt, sid, leaf, params.op, params, signal);
				const writes = params.sections !== undefined || params.replaceAll || params.reviewed;
				if (!writes) {
					const v = await rt.api.call("GET /v1/sessions/{id}/notebook", { path: { id: sid }, query: { leaf }, signal });
					if (!v.exists) return text(rt, "No notes on this branch yet.", { exists: false });
					const nb = v.notebook;
					return text(
						rt,
						`notebook revision ${nb.revision} (${nb.bytes} bytes, ~${nb.tokensEstimate} tokens, ${v.remainingBytes} bytes left)\n\n${v.text}`,
						{ revision: nb.revision },
					);
				}
				return writeNotebook(rt, ctx, sid, leaf, toolCallId, params, signal);
			});
		},
	});
}

/** A notebook write or review: validated by the service, appended as a custom entry, then reported to the state machine. */
async function writeNotebook(
	rt: Runtime,
	ctx: ExtensionContext,
	sid: string,
	leaf: string,
	toolCallId: string,
	params: NotesParams,
	signal: AbortSignal | undefined,
): Promise<ToolResult> {
	const u = ctx.getContextUsage();
	const body: NotebookWriteRequest = {
		leaf,
		reviewedThrough: callerEntry(ctx, toolCallId),
		reviewedTokens: u?.tokens != null ? u.tokens : undefined,
		expectedRevision: params.expectedRevision,
		reviewed: params.reviewed ? true : undefined,
		sections: params.sections,
		replaceAll: params.replaceAll ? true : undefined,
	};
	let w;
	try {
		w = await rt.api.call("POST /v1/sessions/{id}/notebook", { path: { id: sid }, body, signal });
	} catch (e) {
		if (e instanceof ApiError) {
			const notesError = e.message;
			await rt.quietly(() => event(rt, ctx, { kind: "notes", notesOk: false, notesError }));
		}
		throw e;
	}
	rt.pi.appendEntry(w.append.customType, w.append.data);
	let extra = "";
	const r = await rt.quietly(() => event(rt, ctx, { kind: "notes", notesOk: true }));
	if (r?.decision.toolText && r.decision.schedule) extra = `\n${r.decision.toolText}`;
	const res = w.result;
	return text(
		rt,
		JSON.stringify({ revision: res.revision, bytes: res.bytes, tokensEstimate: res.tokensEstimate, remainingBytes: res.remainingBytes }) + extra,
		res,
	);
}

/** A named-note operation (op): the reads and searches ask the service; the changes are validated by it and appended. */
async function namedNote(rt: Runtime, sid: string, leaf: string, op: NonNullable<NotesParams["op"]>, p: NotesParams, signal?: AbortSignal): Promise<ToolResult> {
	const scope = p.scope;
	const path = { id: sid };
	switch (op) {
		case "list": {
			const l = await rt.api.call("GET /v1/sessions/{id}/notes", { path, query: { leaf, scope, offset: p.offset }, signal });
			const lines = l.notes.map((n) => `${n.name} (${n.characters} chars, ${n.updatedAt}) ${n.ref}${n.session && n.session !== rt.S.sid ? ` session=${n.session} agent=${n.agent ?? "?"}` : ""}`);
			return text(rt, (lines.join("\n") || "No named notes.") + footer(l.total, l.nextOffset), l);
		}
		case "read": {
			const n = await rt.api.call("GET /v1/sessions/{id}/notes/read", {
				path,
				query: { leaf, scope, name: p.name, ref: p.ref, offset: p.offset, limit: p.limit },
				signal,
			});
			const more = n.nextOffset != null ? `\n[${n.totalCharacters} characters; continue with offset ${n.nextOffset}]` : "";
			return text(rt, `${n.name} (${n.ref})\n\n${n.content}${more}`, { name: n.name, ref: n.ref, offset: n.offset, totalCharacters: n.totalCharacters });
		}
		case "search": {
			const s = await rt.api.call("GET /v1/sessions/{id}/notes/search", { path, query: { leaf, scope, query: p.query, offset: p.offset }, signal });
			const lines = s.matches.map((m) => `${m.name} @${m.offset} ${m.ref}${m.session && m.session !== rt.S.sid ? ` session=${m.session} agent=${m.agent ?? "?"}` : ""}: ${m.preview}`);
			return text(rt, (lines.join("\n") || "No matches.") + footer(s.total, s.nextOffset), s);
		}
		case "revisions": {
			const r = await rt.api.call("GET /v1/sessions/{id}/notebook/revisions", { path, query: { leaf }, signal });
			const lines = r.revisions.map(
				(v) =>
					`rev ${v.revision} [history entry=${v.entryId}] ${v.timestamp}${v.reviewOnly ? " reviewed" : ""} ${v.bytes} bytes` +
					(v.added?.length ? ` +${v.added.join(",")}` : "") +
					(v.changed?.length ? ` ~${v.changed.join(",")}` : "") +
					(v.removed?.length ? ` -${v.removed.join(",")}` : ""),
			);
			return text(rt, lines.join("\n") || "No notebook revisions on this branch.", r);
		}
		default: {
			const r = await rt.api.call("POST /v1/sessions/{id}/notes", {
				path,
				// scope applies to copy only (and to the reads above); the
				// service refuses it on other changes.
				body: { leaf, op, name: p.name, content: p.content, text: p.text, ref: p.ref, scope: op === "copy" ? scope : undefined },
				signal,
			});
			if (r.append) rt.pi.appendEntry(r.append.customType, r.append.data);
			return text(rt, JSON.stringify(r.result), r.result);
		}
	}
}

/** Registers the new_context tool. */
export function registerNewContext(rt: Runtime): void {
	rt.pi.registerTool({
		name: "new_context",
		label: "New context",
		description: NEW_CONTEXT_DESCRIPTION,
		annotations: WRITES_ANNOTATIONS,
		// Pi 1.6: declared to the model, never called from another tool
		// (a codemode script): a rollover request is a call of its own.
		exposure: "model-only",
		renderCall: renderNewContextCall,
		parameters: Type.Object({
			userRequested: Type.Optional(Type.Boolean({ description: "the user explicitly asked for a fresh window" })),
			handoff: Type.Optional(Type.String({ description: "where the work stands and what comes next, for the new window (at most 12,000 characters)" })),
		}),
		async execute(toolCallId, params, _signal, _onUpdate, ctx) {
			return tool(rt, async () => {
				// Seed B: the rollover request is alone in its batch, so no
				// other call's result is lost to the cut or runs after it.
				const batch = batchSize(ctx, toolCallId);
				if (batch > 1) throw new Error(`new_context must be the only tool call in its message (this one made ${batch}): nothing was scheduled; call it again on its own.`);
				const handoff = params.handoff || undefined;
				const { decision, append } = await event(rt, ctx, { kind: "new_context", userRequested: !!params.userRequested, handoff });
				if (!decision.schedule) throw new Error(decision.toolText || decision.gate?.text || "rollover refused");
				// The Handoff is written only for a scheduled rollover: the
				// summary carries the newest one of the current window.
				if (append) rt.pi.appendEntry(append.customType, append.data);
				return text(rt, (decision.toolText || "rollover scheduled") + (append ? " (Handoff saved)" : ""), { reason: decision.schedule, handoff: !!append });
			});
		},
	});
}
