// /rollover [instructions] (seed B): a pausing preparation. The command
// shows the agent a visible message asking it to refresh its notes, write a
// Handoff (shaped by the user's instructions) and call new_context alone with
// userRequested: true. The rollover that follows is carried out without a
// continuation (Pi 1.6: boundary entries with continue: false; 0.73.1:
// ctx.compact() with no continuation message), so no model request follows
// the checkpoint until the user types again. A run that ends without the
// checkpoint is reported once as not completed; nothing is retried.

import type { ExtensionCommandContext, ExtensionContext, InputEvent } from "@mariozechner/pi-coding-agent";
import { show } from "./context.ts";
import type { Runtime } from "./state.ts";

/** The custom type of the visible preparation message. */
export const PREPARE_TYPE = "note-context/rollover-prepare";

/** The custom type of the visible message that starts an idle preparation (idle.ts). */
export const IDLE_PREPARE_TYPE = "note-context/idle-prepare";

/** The most characters /rollover's instructions may have (seed B). */
export const maxRolloverInstructions = 2000;

/** The preparation message the agent reads. */
export function preparationText(instructions: string): string {
	const shaped = instructions ? `\nThe user's instructions for the Handoff:\n${instructions}\n` : "";
	return (
		"[note-context] The user asked for a new context window (/rollover). Prepare it now: bring your notes up to date " +
		"(notes with the sections that changed, or reviewed: true), then call new_context alone with userRequested: true and " +
		"a handoff saying what is done, what is in progress and what comes next. After new_context succeeds, end your turn " +
		"without further tool calls: the new window waits for the user's next message." +
		shaped
	);
}

/** The message that starts an idle preparation (shown to the user, read by the agent). */
export function idlePreparationText(): string {
	return (
		"[note-context] This context window has been idle and its prompt cache is about to expire. Prepare a new window now, " +
		"while the cache is still warm: bring your notes up to date (notes with the sections that changed, or reviewed: true), " +
		"then call new_context alone with userRequested: true and a handoff saying what is done, what is in progress and what " +
		"comes next. After new_context succeeds, end your turn without further tool calls: the new window waits for the user's next message."
	);
}

/** Registers /rollover. */
export function registerRolloverCommand(rt: Runtime): void {
	rt.pi.registerCommand("rollover", {
		description: "Prepare a new context window now: the agent refreshes its notes, writes a Handoff, rolls over and waits (instructions shape the Handoff)",
		handler: async (args: string, ctx: ExtensionCommandContext) => {
			const instructions = (args ?? "").trim();
			if (rt.disabled) {
				show(ctx, `/rollover: pi-history is turned off (enabled: false in ${rt.disabled}).`, "error");
				return;
			}
			if (refused(rt, ctx, "/rollover", instructions)) return;
			startPreparation(rt, ctx, instructions);
		},
	});
}

/** Shows why a preparation asked for by cmd cannot start (instructions over the limit, or one already under way); true when it cannot. */
function refused(rt: Runtime, ctx: ExtensionContext, cmd: string, instructions: string): boolean {
	const n = [...instructions].length;
	if (n > maxRolloverInstructions) {
		show(ctx, `${cmd}: the instructions have ${n} characters; the limit is ${maxRolloverInstructions}. Nothing was started.`, "error");
		return true;
	}
	if (rt.S.preparing) {
		show(ctx, `${cmd}: a rollover preparation is already under way.`, "warning");
		return true;
	}
	return false;
}

/** Marks a pausing preparation and shows the agent its message (a turn of its own when idle, else a follow-up). */
export function startPreparation(rt: Runtime, ctx: ExtensionContext, instructions: string, kind: "manual" | "idle" = "manual"): void {
	rt.S.preparing = { checkpointed: false, kind };
	const message =
		kind === "idle"
			? { customType: IDLE_PREPARE_TYPE, content: idlePreparationText(), display: true }
			: { customType: PREPARE_TYPE, content: preparationText(instructions), display: true, details: { instructions: instructions || undefined } };
	if (ctx.isIdle()) rt.pi.sendMessage(message, { triggerTurn: true });
	else rt.pi.sendMessage(message, { deliverAs: "followUp" });
}

/**
 * The user's /compact on Pi 1.6 with redirectCompact on (seed B): Pi's
 * compaction is cancelled (an SDK compact() rejects with "Compaction
 * cancelled") and the /rollover preparation starts once Pi has left the
 * compaction, its custom instructions shaping the Handoff. Returns true
 * when the compaction is to be cancelled.
 */
export function redirectCompact(rt: Runtime, ctx: ExtensionContext, reason: string | undefined, customInstructions: string | undefined): boolean {
	if (!rt.S.redirectCompact || rt.disabled || reason !== "manual" || rt.S.ourCompaction !== undefined) return false;
	const instructions = (customInstructions ?? "").trim();
	if (refused(rt, ctx, "/compact", instructions)) return true;
	// Pi refuses a turn started while its compaction runs: start it once
	// the cancelled compaction is over.
	setTimeout(() => {
		try {
			startPreparation(rt, ctx, instructions);
		} catch {
			// the session went away meanwhile
		}
	}, 0);
	return true;
}

/** True when the rollover about to be carried out is the pausing one /rollover asked for. */
export function pausing(rt: Runtime, reason: string): boolean {
	return rt.S.preparing !== undefined && reason === "user";
}

/**
 * Ends the preparation when its run is over: reports the checkpoint, or
 * that none was made (the conversation is left as it was; /rollover tries
 * again). Called once per run end; does nothing without a preparation.
 */
export function endPreparation(rt: Runtime, ctx: ExtensionContext): void {
	const p = rt.S.preparing;
	if (!p) return;
	rt.S.preparing = undefined;
	const what = p.kind === "idle" ? "Idle rollover" : "Rollover";
	if (p.checkpointed) show(ctx, `${what} done: a new context window is open and waits for your next message.`);
	else if (p.kind === "idle") show(ctx, "Idle rollover not completed: the agent ended without a checkpoint; the conversation is unchanged. It is not tried again until your next run; /rollover starts one now.", "warning");
	else show(ctx, "Rollover not completed: the agent ended without a checkpoint; the conversation is unchanged. Type /rollover to try again.", "warning");
	sendQueued(rt);
}

/**
 * Input typed while a preparation runs is held (Pi would deliver it inside
 * the preparation's run, in the old window) and sent once the preparation
 * is over, so it starts the next run in the new window. Returns true when
 * the input was held.
 */
export function holdInput(rt: Runtime, ctx: ExtensionContext, ev: InputEvent): boolean {
	if (!rt.S.preparing || ev.source === "extension" || ctx.isIdle()) return false;
	rt.S.queued.push({ text: ev.text, images: ev.images });
	show(ctx, "Your message waits until the rollover preparation is over; it will run in the new context window.");
	return true;
}

/** Sends the input held during a preparation, in the order it was typed. */
function sendQueued(rt: Runtime): void {
	const queued = rt.S.queued;
	rt.S.queued = [];
	for (const q of queued) {
		const content = q.images && q.images.length > 0 ? [{ type: "text" as const, text: q.text }, ...q.images] : q.text;
		// The first starts a run; the others follow it.
		try {
			// Pi's runtime returns nothing here (the type says a promise).
			void Promise.resolve(rt.pi.sendUserMessage(content, q === queued[0] ? undefined : { deliverAs: "followUp" })).catch(() => undefined);
		} catch {
			// the session went away meanwhile
		}
	}
}
