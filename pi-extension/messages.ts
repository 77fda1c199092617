// Reading and shaping Pi's entries and messages: no service, no state. The
// branch's last compaction, the entry that issued a tool call, entry-id
// trailers on the messages the model sees, and the snake_cased copy of a
// result's details that Pi 1.6 hands scripts as structuredContent.

import type { ContextEvent, ExtensionContext, SessionEntry, ToolResultEvent } from "@mariozechner/pi-coding-agent";
import type { JsonValue } from "@mariozechner/pi-ai";
import type { CompactionDetails } from "./api-types.ts";

/** A message of the context Pi is about to send to the model. */
export type AgentMessage = ContextEvent["messages"][number];

/** A part of a tool result's content (text or image). */
export type ContentPart = ToolResultEvent["content"][number];

/** The messages that carry an entry-id trailer. */
export type TrailerMessage = Extract<AgentMessage, { role: "user" | "toolResult" | "custom" | "compactionSummary" | "branchSummary" }>;

const TRAILER_ROLES: ReadonlySet<string> = new Set(["user", "toolResult", "custom", "compactionSummary", "branchSummary"]);

/** Whether m is a message that carries an entry-id trailer. */
export function takesTrailer(m: AgentMessage): m is TrailerMessage {
	return TRAILER_ROLES.has(m.role);
}

/** The active branch's entries. */
export function branchOf(ctx: ExtensionContext): SessionEntry[] {
	return ctx.sessionManager.getBranch();
}

/** The last compaction entry on the active branch. */
export function lastCompactionEntry(ctx: ExtensionContext): Extract<SessionEntry, { type: "compaction" }> | undefined {
	const branch = branchOf(ctx);
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type === "compaction") return e;
	}
	return undefined;
}

/** The id of the last compaction on the active branch ("" without one). */
export function lastCompactionOf(ctx: ExtensionContext): string {
	return lastCompactionEntry(ctx)?.id ?? "";
}

/** The assistant entry that issued tool call id, with all the tool calls of its message (it is persisted before the tool runs). */
function caller(ctx: ExtensionContext, toolCallId: string): { id: string; calls: number } | undefined {
	const branch = branchOf(ctx);
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type === "message" && e.message?.role === "assistant" && Array.isArray(e.message.content)) {
			const calls = e.message.content.filter((b) => b.type === "toolCall");
			if (calls.some((b) => b.id === toolCallId)) return { id: e.id, calls: calls.length };
		}
	}
	return undefined;
}

/** The id of the assistant entry that issued tool call id. */
export function callerEntry(ctx: ExtensionContext, toolCallId: string): string | undefined {
	return caller(ctx, toolCallId)?.id;
}

/** How many tool calls the assistant message holding toolCallId makes (0 when it is not on the branch). */
export function batchSize(ctx: ExtensionContext, toolCallId: string): number {
	return caller(ctx, toolCallId)?.calls ?? 0;
}

/** The key that matches a message of the context to the entry that holds it (see entryIds). */
export function messageKey(m: AgentMessage): string {
	return `${m.role}:${m.timestamp}:${m.role === "toolResult" ? m.toolCallId : ""}`;
}

/**
 * The entry id of each message on the branch, by messageKey: messages by
 * role, timestamp and tool call; custom messages and summaries by the time
 * of their entry.
 */
export function entryIds(ctx: ExtensionContext): Map<string, string> {
	const ids = new Map<string, string>();
	for (const e of branchOf(ctx)) {
		if (e.type === "message") {
			ids.set(messageKey(e.message), e.id);
		} else if (e.type === "custom_message") {
			ids.set(`custom:${new Date(e.timestamp).getTime()}:`, e.id);
		} else if (e.type === "compaction") {
			ids.set(`compactionSummary:${new Date(e.timestamp).getTime()}:`, e.id);
		} else if (e.type === "branch_summary") {
			ids.set(`branchSummary:${new Date(e.timestamp).getTime()}:`, e.id);
		}
	}
	return ids;
}

/** Whether a rollover summary holds the index of earlier user messages. */
export function hasIndex(summary: unknown): boolean {
	return typeof summary === "string" && summary.includes("\n## Earlier user messages");
}

/** An object's members, or undefined for anything else. */
export function record(v: unknown): Record<string, unknown> | undefined {
	return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** The members of a compaction's details that the service's template sets (none for another summary). */
export function templateDetails(details: unknown): Partial<CompactionDetails> {
	const d = record(details);
	if (!d) return {};
	return {
		windowNumber: typeof d.windowNumber === "number" ? d.windowNumber : undefined,
		reason: typeof d.reason === "string" ? (d.reason as CompactionDetails["reason"]) : undefined,
	};
}

/** A copy of v whose object keys are snake_case (the structuredContent scripts read); undefined fields are left out. */
export function snake(v: unknown): JsonValue {
	if (Array.isArray(v)) return v.map(snake);
	if (!v || typeof v !== "object") return v as JsonValue;
	const out: { [key: string]: JsonValue } = {};
	for (const [k, x] of Object.entries(v)) {
		if (x === undefined) continue;
		out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = snake(x);
	}
	return out;
}

/** The index of the last text part of content, or -1. */
export function lastTextIndex(content: readonly ContentPart[] | undefined): number {
	if (!Array.isArray(content)) return -1;
	for (let i = content.length - 1; i >= 0; i--) if (content[i]?.type === "text") return i;
	return -1;
}

/** Appends a trailer to a message's last text block (or as its own block); structured text and non-text blocks are left as they are. */
export function withTrailer(m: TrailerMessage, t: string): TrailerMessage {
	if (m.role === "compactionSummary" || m.role === "branchSummary") {
		return { ...m, summary: `${m.summary}\n\n${t}` };
	}
	if (typeof m.content === "string") return { ...m, content: `${m.content}\n\n${t}` } as TrailerMessage;
	if (!Array.isArray(m.content)) return m;
	const content: ContentPart[] = m.content.slice();
	const i = lastTextIndex(content);
	const last = i >= 0 ? content[i] : undefined;
	if (last?.type === "text" && !looksStructured(last.text)) {
		content[i] = { ...last, text: `${last.text}\n\n${t}` };
	} else {
		content.push({ type: "text", text: t });
	}
	return { ...m, content } as TrailerMessage;
}

function looksStructured(s: string): boolean {
	const t = s.trim();
	if (!(t.startsWith("{") || t.startsWith("["))) return false;
	try {
		JSON.parse(t);
		return true;
	} catch {
		return false;
	}
}
