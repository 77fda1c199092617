// Idle rollover (seed B): a large context window left idle loses the
// provider's prompt cache, and the next message would resend all of it
// uncached. Just before the cache expires, while a request can still read
// the cached prefix cheaply, the extension starts the same pausing
// preparation as /rollover: the agent refreshes its notes, writes a Handoff,
// rolls over and stops, so the user's next message starts from a small
// window.
//
// When: after a run settles (not aborted) in an interactive frontend (Pi
// 1.6's ctx.mode "tui" or "rpc"), with Pi's context usage at least
// idleRollover.minTokens, and nothing since (input, a new run, a model or
// thinking-level change, /tree, a compaction). Timing: Pi's cache-warming
// refresh point (90% of the model's prompt-cache lifetime, at least ten
// seconds before expiry; the lifetime is the model's promptCache tier that
// PI_CACHE_RETENTION selects) plus two seconds, so Pi's own warming decision
// lands first. While Pi's cacheWarming "idle" keeps the cache warm (its
// cache_warming_decision says "warm"), the moment moves one refresh period
// on each time; once Pi stops warming, the rollover runs at the refresh point
// after Pi's last warm. Past Pi's late-refresh cutoff (halfway from the
// refresh point to expiry: the machine slept, say) the cache is taken as
// lost and nothing runs. An idle rollover is tried once: the next one waits
// until the user has started another run.
//
// The clock is injectable (clock.ts) so tests run on a fake clock.

import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { startPreparation } from "./prepare.ts";
import { stale } from "./session.ts";
import type { Runtime } from "./state.ts";

/** How long after Pi's refresh point the idle rollover runs, so Pi's own warming decision lands first. */
export const afterPiMs = 2000;

/**
 * Pi's refresh point for a prompt cache lifetime (pi-ai's
 * getCacheWarmingDelayMs): 90% of it, at least ten seconds before expiry;
 * undefined for a lifetime of ten seconds or less.
 */
export function refreshDelayMs(ttlMs: number): number | undefined {
	if (!(ttlMs > 10_000)) return undefined;
	return Math.max(1, Math.floor(Math.min(ttlMs * 0.9, ttlMs - 10_000)));
}

/** The prompt-cache lifetime of ctx's model for the tier PI_CACHE_RETENTION selects (short unless "long"), in ms. */
export function cacheLifetimeMs(ctx: ExtensionContext): number | undefined {
	const tier = process.env.PI_CACHE_RETENTION === "long" ? "long" : "short";
	const pc: unknown = ctx.model ? Reflect.get(ctx.model, "promptCache") : undefined;
	const seconds: unknown = typeof pc === "object" && pc !== null ? Reflect.get(pc, tier) : undefined;
	return typeof seconds === "number" && seconds > 0 ? seconds * 1000 : undefined;
}

/** The idle timer of the current session. */
export interface IdleTimer {
	handle: unknown;
	ctx: ExtensionContext;
	ttlMs: number;
	delayMs: number;
	/** The refresh point the timer follows (the last request or Pi's last warm, plus the delay). */
	refreshAt: number;
	/** Pi decided to warm the cache at least once since the timer was armed. */
	warming?: boolean;
}

/** Stops the idle timer (something happened: the window is not idle). */
export function cancelIdle(rt: Runtime): void {
	const t = rt.idleTimer;
	if (!t) return;
	rt.idleTimer = undefined;
	rt.clock.clearTimeout(t.handle);
}

/** Why no idle rollover is armed now ("" when it may be). */
function idleBlocked(rt: Runtime, ctx: ExtensionContext): string {
	if (rt.disabled) return "turned off";
	const mode: unknown = Reflect.get(ctx, "mode");
	if (mode !== "tui" && mode !== "rpc") return "not an interactive frontend";
	if (!rt.S.cm.idleRollover.enabled) return "idleRollover.enabled is false";
	if (rt.S.idleTried) return "tried once since the user's last run";
	if (rt.S.preparing) return "a preparation is under way";
	const tokens = ctx.getContextUsage()?.tokens;
	if (tokens == null || tokens < rt.S.cm.idleRollover.minTokens) return "below idleRollover.minTokens";
	return "";
}

/** Arms the idle timer when a run has settled (not aborted). */
export function armIdle(rt: Runtime, ctx: ExtensionContext): void {
	cancelIdle(rt);
	if (idleBlocked(rt, ctx)) return;
	const ttlMs = cacheLifetimeMs(ctx);
	const delayMs = ttlMs === undefined ? undefined : refreshDelayMs(ttlMs);
	if (ttlMs === undefined || delayMs === undefined) return; // no lifetime: never
	schedule(rt, { handle: undefined, ctx, ttlMs, delayMs, refreshAt: rt.clock.now() + delayMs });
}

function schedule(rt: Runtime, t: IdleTimer): void {
	t.handle = rt.clock.setTimeout(() => fire(rt, t), Math.max(0, t.refreshAt + afterPiMs - rt.clock.now()));
	rt.idleTimer = t;
}

/**
 * Pi's cache_warming_decision: "warm" means Pi refreshes the cache now, so
 * the next refresh point is one period later; "stop" leaves the timer where
 * it is (due right after this decision).
 */
export function onWarmingDecision(rt: Runtime, action: unknown): void {
	const t = rt.idleTimer;
	if (!t || action !== "warm") return;
	rt.clock.clearTimeout(t.handle);
	schedule(rt, { ...t, refreshAt: rt.clock.now() + t.delayMs, warming: true });
}

/**
 * How much later than planned Pi's next warming decision falls: Pi counts
 * the next period from the end of its refresh request (the cache_warm usage
 * entry it writes), not from its decision. 0 when not later.
 */
function refreshOverrunMs(t: IdleTimer): number {
	if (!t.warming) return 0;
	const branch = t.ctx.sessionManager.getBranch();
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type !== "usage") continue;
		if (Reflect.get(e, "kind") !== "cache_warm") return 0;
		const at = Date.parse(e.timestamp);
		return Number.isNaN(at) ? 0 : Math.max(0, at + t.delayMs + afterPiMs - Date.now());
	}
	return 0;
}

/** The timer is due: start the preparation if the window is still idle, large and its cache not yet lost. */
function fire(rt: Runtime, t: IdleTimer): void {
	if (rt.idleTimer !== t) return;
	rt.idleTimer = undefined;
	const ctx = t.ctx;
	if (stale(ctx) || !ctx.isIdle() || idleBlocked(rt, ctx)) return;
	const overrun = refreshOverrunMs(t);
	if (overrun > 0) {
		schedule(rt, { ...t, refreshAt: t.refreshAt + overrun });
		return;
	}
	// Pi's late-refresh cutoff: halfway from the refresh point to expiry.
	if (rt.clock.now() > t.refreshAt + Math.floor((t.ttlMs - t.delayMs) / 2)) return;
	rt.S.idleTried = true;
	startPreparation(rt, ctx, "", "idle");
}
