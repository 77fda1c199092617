// The /context command (seed B): what the user needs to judge the context
// window at a glance. Pi's own numbers (ctx.getContextUsage() and Pi's
// compaction settings, never a separate estimate), the branch's notebook and
// the session's named notes (counts, sizes, staleness), the branch's recent
// context windows and what the service has scheduled. Each part the service
// cannot answer says so on its own line; the command never fails as a whole.

import type { ExtensionCommandContext, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { getAgentDir, SettingsManager } from "@mariozechner/pi-coding-agent";
import { afterPiMs } from "./idle.ts";
import { leafOf, push } from "./session.ts";
import type { Runtime } from "./state.ts";

/** How many of the branch's newest context windows /context lists. */
export const contextWindowsShown = 5;

/** Pi's compaction settings as /context shows them (undefined: Pi's default, not set). */
interface CompactionView {
	enabled?: boolean;
	reserveTokens?: number;
	keepRecentTokens?: number;
}

/** Pi's compaction settings for the current model, from Pi itself (1.6) or its settings files (0.73.1). */
function compactionSettings(rt: Runtime, ctx: ExtensionContext): CompactionView | undefined {
	try {
		if (rt.caps.settings) {
			const c = rt.pi.getSettings()?.compaction ?? {};
			const m = ctx.model;
			const o = (m && c.modelOverrides?.[`${m.provider}/${m.id}`]) ?? {};
			return {
				enabled: c.enabled,
				reserveTokens: o.reserveTokens ?? c.reserveTokens,
				keepRecentTokens: o.keepRecentTokens ?? c.keepRecentTokens,
			};
		}
		const s = SettingsManager.create(ctx.cwd, getAgentDir()).getCompactionSettings();
		return { enabled: s.enabled, reserveTokens: s.reserveTokens, keepRecentTokens: s.keepRecentTokens };
	} catch {
		return undefined;
	}
}

const num = (n: number | undefined | null): string => (n == null ? "?" : n.toLocaleString("en-US"));

/** How long ago an RFC 3339 time was, as "3m ago" ("" when unknown). */
export function ago(ts: string | undefined, now = Date.now()): string {
	if (!ts) return "";
	const t = Date.parse(ts);
	if (Number.isNaN(t)) return "";
	const s = Math.max(0, Math.round((now - t) / 1000));
	if (s < 60) return `${s}s ago`;
	if (s < 3600) return `${Math.round(s / 60)}m ago`;
	if (s < 86400) return `${Math.round(s / 3600)}h ago`;
	return `${Math.round(s / 86400)}d ago`;
}

/** The /context report, as plain lines. */
export async function contextReport(rt: Runtime, ctx: ExtensionContext): Promise<string> {
	const out: string[] = [];
	const u = ctx.getContextUsage();
	const m = ctx.model;
	out.push(`Context (${m ? `${m.provider}/${m.id}` : "no model"})`);
	if (u) {
		const pct = u.percent != null ? ` (${u.percent.toFixed(1)}%)` : "";
		out.push(`  usage: ${u.tokens == null ? "unknown until the next response" : num(u.tokens)} of ${num(u.contextWindow)} tokens${pct}, Pi's estimate`);
	} else {
		out.push("  usage: unknown (no model)");
	}
	const c = compactionSettings(rt, ctx);
	if (c) {
		const on = c.enabled === false ? "off" : "on";
		out.push(`  Pi compaction: ${on}, reserveTokens ${num(c.reserveTokens ?? 16384)}, keepRecentTokens ${num(c.keepRecentTokens ?? 20000)}`);
	}
	const cm = rt.S.cm;
	const tail = cm.tailTokens === undefined ? "Pi's keepRecentTokens (tailTokens not set)" : `${num(cm.tailTokens)} tokens`;
	const idle = cm.idleRollover.enabled ? `on from ${num(cm.idleRollover.minTokens)} tokens` : "off";
	out.push(`  contextManagement: Tail ${tail}; idle rollover ${idle}`);
	if (rt.disabled) {
		out.push(`pi-history is turned off (enabled: false in ${rt.disabled}).`);
		return out.join("\n");
	}
	try {
		await push(rt, ctx);
	} catch (e) {
		out.push(`pi-history service: unreachable (${e instanceof Error ? e.message : String(e)})`);
		return out.join("\n");
	}
	const sid = rt.S.sid;
	const leaf = leafOf(ctx);
	const path = { id: sid };
	const part = async (name: string, fn: () => Promise<void>) => {
		try {
			await fn();
		} catch (e) {
			out.push(`${name}: not available (${e instanceof Error ? e.message : String(e)})`);
		}
	};
	await part("notebook", async () => {
		const v = await rt.api.call("GET /v1/sessions/{id}/notebook", { path, query: { leaf } });
		if (!v.exists) {
			out.push("Notebook: none on this branch");
			return;
		}
		const nb = v.notebook;
		const sections = Object.keys(nb.sections).length;
		let stale = "";
		if (nb.reviewedTokens != null && u?.tokens != null) stale = `, ${num(Math.max(0, u.tokens - nb.reviewedTokens))} tokens of context since its last review`;
		const when = ago(nb.timestamp);
		out.push(
			`Notebook: revision ${nb.revision}, ${sections} section${sections === 1 ? "" : "s"}, ${num(nb.bytes)} bytes (~${num(nb.tokensEstimate)} tokens, ${num(v.remainingBytes)} bytes left)` +
				(when ? `, written ${when}` : "") +
				stale +
				(nb.precedesCompaction ? ", older than the last compaction" : ""),
		);
	});
	await part("named notes", async () => {
		const l = await rt.api.call("GET /v1/sessions/{id}/notes", { path, query: { leaf } });
		const chars = l.notes.reduce((a, n) => a + n.characters, 0);
		out.push(`Named notes: ${l.total}${l.total > 0 ? ` (${num(chars)} characters${l.nextOffset != null ? " on the first page" : ""})` : ""}`);
		const newest = [...l.notes].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
		for (const n of newest.slice(0, 10)) out.push(`  ${n.name}: ${num(n.characters)} characters, updated ${ago(n.updatedAt) || n.updatedAt}`);
		if (newest.length > 10) out.push(`  … ${l.total - 10} more (notes {op: "list"})`);
	});
	await part("windows", async () => {
		const r = await rt.api.call("GET /v1/sessions/{id}/windows", { path, query: { leaf } });
		const ws = r.windows;
		out.push(`Context windows: ${ws.length} on this branch${ws.length > contextWindowsShown ? ` (the newest ${contextWindowsShown})` : ""}`);
		for (const w of ws.slice(-contextWindowsShown)) {
			const when = ago(w.startedAt);
			out.push(`  w${w.window}: started by ${w.startedBy}${when ? ` ${when}` : ""}, ${num(w.entries)} entries`);
		}
	});
	await part("scheduled", async () => {
		const r = await rt.api.call("GET /v1/sessions/{id}/rollover-state", { path, query: { leaf } });
		const s = r.state;
		if (rt.S.preparing) out.push(`Preparation: ${rt.S.preparing.kind === "idle" ? "an idle" : "a /rollover"} preparation is under way (notes, a Handoff, then the checkpoint)`);
		const t = rt.idleTimer;
		if (t) out.push(`Idle rollover: due in ${Math.max(0, Math.round((t.refreshAt + afterPiMs - rt.clock.now()) / 1000))}s unless something happens first`);
		if (!s?.pending) {
			out.push("Scheduled: nothing");
			return;
		}
		const stage = s.stage ? `, maintenance ${s.stage}` : "";
		out.push(`Scheduled: a ${s.pending} rollover${s.confirmed ? " (confirmed)" : ""}${stage}`);
	});
	return out.join("\n");
}

/**
 * Shows a report to the user: a notification in the TUI (and RPC), standard
 * output where Pi has no UI (print mode and the SDK). It never reaches the
 * model.
 */
export function show(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error" = "info"): void {
	if (ctx.hasUI) ctx.ui.notify(text, level);
	else process.stdout.write(`${text}\n`);
}

/** Registers /context. */
export function registerContextCommand(rt: Runtime): void {
	rt.pi.registerCommand("context", {
		description: "Show Pi's context usage and compaction settings, the notes, recent context windows and what is scheduled",
		handler: async (_args: string, ctx: ExtensionCommandContext) => {
			await rt.track(async () => show(ctx, await contextReport(rt, ctx)));
		},
	});
}
