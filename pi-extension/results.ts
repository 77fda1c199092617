// What the extension's tools return: a text result with its details, the
// same details snake_cased as structuredContent on Pi 1.6, and a failure
// that Pi 1.6 keeps as an isError result and Pi 0.73.1 gets thrown.

import type { AgentToolResult } from "@mariozechner/pi-coding-agent";
import { Type } from "typebox";
import { snake } from "./messages.ts";
import { ApiError, ServiceDown } from "./service.ts";
import type { Runtime } from "./state.ts";

/** A result of the extension's tools; details are whatever the call reports (camelCase). */
export type ToolResult = AgentToolResult<object>;

// The structured result of notes and history: an object whose fields
// depend on the call (the details of text() below, snake_cased).
export const outputSchema = Type.Object({}, { additionalProperties: true });

/**
 * Wraps a tool body: a missing service, an error status or a refusal
 * becomes a failed result. Pi 1.6 takes a returned isError result (the
 * details and structured content stay with it); Pi 0.73.1 ignores that
 * flag, so there the error is thrown.
 */
export async function tool(rt: Runtime, fn: () => Promise<ToolResult>): Promise<ToolResult> {
	return rt.track(async () => {
		try {
			if (rt.disabled) throw new Error(`pi-history's notes, new_context and history are turned off (enabled: false in ${rt.disabled}).`);
			return await fn();
		} catch (e) {
			const msg = e instanceof Error ? e.message : String(e);
			if (!rt.caps.settings) throw e instanceof ServiceDown || e instanceof ApiError ? new Error(msg) : e;
			const problem = e instanceof ApiError ? e.problem : undefined;
			const details = { error: msg, status: e instanceof ApiError ? e.status : undefined, serviceDown: e instanceof ServiceDown || undefined };
			return {
				content: [{ type: "text" as const, text: msg }],
				details,
				structuredContent: snake({ error: msg, status: details.status, type: problem?.type, serviceDown: details.serviceDown }),
				isError: true,
			};
		}
	});
}

/**
 * A tool result: the text the model reads, the details the session keeps
 * (camelCase) and, on Pi 1.6, the same details snake_cased as the
 * structuredContent scripts receive (outputSchema above).
 */
export function text(rt: Runtime, t: string, details: object = {}): ToolResult {
	const r: ToolResult = { content: [{ type: "text" as const, text: t }], details };
	if (rt.caps.settings) r.structuredContent = snake(details);
	return r;
}

/** The paging line of a list or search of named notes ("" on the last page). */
export const footer = (total: number, next: number | null | undefined): string => (next != null ? `\n[${total} in all; next page: offset ${next}]` : "");
