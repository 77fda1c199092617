// Keeping the service current and asking it what to do: the session's new
// journal entries pushed before each call that must see them, the
// configuration, Pi's compaction settings, and the rollover state machine's
// events (each answered with a decision).

import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { getAgentDir, SettingsManager } from "@mariozechner/pi-coding-agent";
import { existsSync } from "node:fs";
import type { Decision, EntryToAppend, EventRequest } from "./api-types.ts";
import { lastCompactionOf } from "./messages.ts";
import { ApiError, ServiceDown } from "./service.ts";
import type { Runtime } from "./state.ts";
import { SessionState } from "./state.ts";

/** The extension's own tools (they leave the active set while it is turned off). */
export const OUR_TOOLS: ReadonlySet<string> = new Set(["notes", "new_context", "history"]);

/** Pi's compaction settings as the service takes them. */
export type PiSettings = NonNullable<EventRequest["pi"]>;

/** One event of the rollover state machine. */
export type RolloverEvent = EventRequest["event"];

/** Stores every entry of the session the service has not seen yet. */
export async function push(rt: Runtime, ctx: ExtensionContext, signal?: AbortSignal): Promise<void> {
	const sm = ctx.sessionManager;
	const sid = sm.getSessionId();
	if (sid !== rt.S.sid) {
		const cm = rt.S.cm; // read at session_start; the same settings files
		rt.S = new SessionState();
		rt.S.cm = cm;
		rt.S.sid = sid;
		rt.S.lastCompaction = lastCompactionOf(ctx);
	}
	const S = rt.S;
	const lines: string[] = [];
	const ids: string[] = [];
	if (!S.headerPushed) {
		const h = sm.getHeader();
		if (h) lines.push(JSON.stringify(h));
	}
	for (const e of sm.getEntries()) {
		if (S.pushed.has(e.id)) continue;
		lines.push(JSON.stringify(e));
		ids.push(e.id);
	}
	const file = sm.getSessionFile();
	if (lines.length > 0) {
		try {
			await rt.api.call("POST /v1/sessions/{id}/entries", { path: { id: sid }, body: { lines }, signal });
		} catch (e) {
			if (!(e instanceof ApiError) || !file || !existsSync(file)) throw e;
			// The service holds something else for these ids (the file was
			// rewritten, say): read the journal itself instead.
			await rt.api.call("POST /v1/sessions/{id}/sync", { path: { id: sid }, body: { path: file }, signal });
		}
		S.headerPushed = true;
		for (const id of ids) S.pushed.add(id);
	}
	if (file && S.registeredFile !== file && existsSync(file)) {
		// Register the journal path (Pi writes the file only once the
		// first assistant message exists).
		try {
			await rt.api.call("POST /v1/sessions/{id}/sync", { path: { id: sid }, body: { path: file }, signal });
		} catch (e) {
			if (e instanceof ServiceDown) throw e;
			// a journal outside the service's sessions directories: pushes suffice
		}
		S.registeredFile = file;
	}
}

/**
 * Pi's compaction settings for the current model: on Pi 1.6 from
 * pi.getSettings() with the model's override (compaction.modelOverrides
 * keyed by "provider/id", each value on its own, as Pi resolves them); on
 * 0.73.1 from its settings files; with contextManagement.tailTokens
 * (settings.ts). Undefined values get Pi's documented defaults from the
 * service.
 */
export function piSettings(rt: Runtime, ctx: ExtensionContext): PiSettings | undefined {
	try {
		if (rt.caps.settings) {
			const c = rt.pi.getSettings()?.compaction ?? {};
			const m = ctx.model;
			const o = (m && c.modelOverrides?.[`${m.provider}/${m.id}`]) ?? {};
			return { keepRecentTokens: o.keepRecentTokens ?? c.keepRecentTokens, reserveTokens: o.reserveTokens ?? c.reserveTokens, tailTokens: rt.S.cm.tailTokens };
		}
		const s = SettingsManager.create(ctx.cwd, getAgentDir()).getCompactionSettings();
		return { keepRecentTokens: s.keepRecentTokens, reserveTokens: s.reserveTokens, tailTokens: rt.S.cm.tailTokens };
	} catch {
		return undefined; // the service uses Pi's documented defaults
	}
}

/**
 * True when ctx belongs to a runtime Pi has replaced or shut down (a
 * queued event that arrives after `pi -p` finished, say): touching it
 * throws, so the hook does nothing.
 */
export function stale(ctx: ExtensionContext): boolean {
	try {
		void ctx.sessionManager;
		return false;
	} catch {
		return true;
	}
}

/** The context usage as the service takes it (tokens null when unknown). */
export function usage(ctx: ExtensionContext): EventRequest["usage"] {
	const u = ctx.getContextUsage();
	if (!u) return undefined;
	return { tokens: u.tokens ?? null, contextWindow: u.contextWindow };
}

/** The current model as "provider/id" ("" without one). */
export function modelId(ctx: ExtensionContext): string {
	const m = ctx.model;
	return m ? `${m.provider}/${m.id}` : "";
}

/** The current leaf entry ("" before the first). */
export function leafOf(ctx: ExtensionContext): string {
	return ctx.sessionManager.getLeafId() ?? "";
}

/** Reads the service's configuration once per session, or again when fresh (at the start of each run: the service re-reads its file when it changes). */
export async function loadConfig(rt: Runtime, fresh = false): Promise<void> {
	if (rt.S.configLoaded && !fresh) return;
	const c = await rt.api.call("GET /v1/context/config", {});
	rt.S.externalModels = c?.config?.externalCompactionModels ?? [];
	rt.S.redirectCompact = c?.config?.redirectCompact === true;
	rt.disabled = c?.config?.enabled === false ? c.path || "the configuration" : "";
	rt.S.configLoaded = true;
}

/**
 * With enabled: false the extension steps aside entirely: no guidance,
 * no trailers, no status line, and its tools leave the active set (they
 * come back when it is turned on again).
 */
export function applyEnabled(rt: Runtime): void {
	const pi = rt.pi;
	try {
		const active = pi.getActiveTools();
		if (rt.disabled) {
			const mine = active.filter((n) => OUR_TOOLS.has(n));
			if (mine.length === 0) return;
			rt.toolsRemoved = mine;
			pi.setActiveTools(active.filter((n) => !OUR_TOOLS.has(n)));
		} else if (rt.toolsRemoved.length > 0) {
			pi.setActiveTools([...active, ...rt.toolsRemoved.filter((n) => !active.includes(n))]);
			rt.toolsRemoved = [];
		}
	} catch {
		// a host without tool selection: the tools refuse instead
	}
}

/** Reports one state-machine event and returns the decision. */
export async function event(rt: Runtime, ctx: ExtensionContext, ev: RolloverEvent): Promise<{ decision: Decision; notebook?: string; append?: EntryToAppend }> {
	await push(rt, ctx);
	const r = await rt.api.call("POST /v1/sessions/{id}/events", {
		path: { id: rt.S.sid },
		body: { leaf: leafOf(ctx), event: ev, usage: usage(ctx), model: modelId(ctx), pi: piSettings(rt, ctx) },
	});
	rt.S.rollover = r.state;
	return { decision: r.decision ?? {}, notebook: r.notebook, append: r.append };
}
