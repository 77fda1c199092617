// Carrying out the service's decisions: steers into the run, and rollovers,
// either as boundary entries (Pi ≥ 1.6: a compaction and a continuation
// returned from agent_before_settle or the checkpoint's turn_end, continue:
// true) or through ctx.compact() followed by a continuation message (Pi
// 0.73.1, an external compaction owner, a declined template); and telling the
// service what became of a proposed compaction.

import type { BoundaryResult, ExtensionContext, SessionBoundaryDraft } from "@mariozechner/pi-coding-agent";
import type { Decision } from "./api-types.ts";
import { hasIndex, lastCompactionEntry, templateDetails } from "./messages.ts";
import { endPreparation, pausing } from "./prepare.ts";
import { event, leafOf, modelId, piSettings, push } from "./session.ts";
import type { Reason, Runtime } from "./state.ts";
import { continuation, continuationOwnSummary, failureWhy } from "./text.ts";

export const MAINTENANCE_TYPE = "note-context/maintenance";
export const CONTINUE_TYPE = "note-context/continue";

/** Sends a steer (reminder or maintenance message) into the run. */
export function steer(rt: Runtime, d: Decision): void {
	if (!d.steer) return;
	rt.pi.sendMessage(
		{ customType: d.steerType || MAINTENANCE_TYPE, content: d.steer, display: true, details: d.attempt ? { attempt: d.attempt } : undefined },
		{ deliverAs: "steer" },
	);
}

/** Carries out a rollover: Pi compacts (asking session_before_compact, where the service writes the summary), then a continuation message starts the next request. */
export function rollOver(rt: Runtime, ctx: ExtensionContext, reason: Reason): void {
	if (rt.S.ourCompaction) return;
	rt.S.ourCompaction = reason;
	// A /rollover preparation stops at the checkpoint: no continuation.
	const pause = pausing(rt, reason);
	let finish!: () => void;
	rt.rolloverDone = new Promise<void>((r) => (finish = r));
	const done = () => {
		rt.S.ourCompaction = undefined;
		if (pause) endPreparation(rt, ctx);
		finish();
	};
	const resume = (content: string) => {
		if (pause) return;
		// A prompt the user typed while Pi compacted starts the next run
		// itself (it waits in the input hook): a continuation started
		// now would race it, and the summary already says what happened.
		if (rt.promptsWaiting > 0) return;
		try {
			rt.pi.sendMessage({ customType: CONTINUE_TYPE, content, display: true }, { triggerTurn: true });
		} catch {
			// the session went away meanwhile
		}
	};
	ctx.compact({
		onComplete: (res) => {
			// Only the service's summary (it sets windowNumber) holds the
			// notebook; Pi's own, written when the service declined or
			// could not be reached, does not.
			const d = templateDetails(res?.details);
			const win = d.windowNumber;
			if (pause && rt.S.preparing) rt.S.preparing.checkpointed = win !== undefined;
			resume(win ? continuation(win, d.reason ?? reason, hasIndex(res?.summary)) : continuationOwnSummary(reason));
			done();
		},
		onError: (err: unknown) => {
			done();
			const why = failureWhy(err);
			// Another compaction got there first (Pi's own, at its
			// threshold): a new window is open all the same.
			if (why === "already_compacted") resume(continuationOwnSummary(reason));
			// The service drops the rollover, so the next run does not ask
			// for it (and fail) again, and the ledger says why.
			void rt.quietly(() => event(rt, ctx, { kind: "rollover_failed", why }));
		},
	});
}

/**
 * The boundary rollover (Pi ≥ 1.6): the service re-checks the gate at
 * the actual cut and writes the template compaction, which is returned
 * with a continuation message as entries of this boundary, continue:
 * true, so Pi writes both inside the run and makes the next request on
 * the new window. Nothing is returned when another handler already
 * proposes a compaction here (it satisfies the schedule), when another
 * extension owns compaction for the model, or when the template is
 * declined (the schedule is then handed to agent_settled).
 */
export async function boundaryRollover(
	rt: Runtime,
	ctx: ExtensionContext,
	reason: Reason,
	ev: { entries?: SessionBoundaryDraft[] },
): Promise<BoundaryResult | undefined> {
	const proposal: SessionBoundaryDraft[] = Array.isArray(ev.entries) ? ev.entries : [];
	if (proposal.some((e) => e?.type === "compaction")) {
		await event(rt, ctx, { kind: "rollover_failed", why: "other_compaction" });
		return undefined;
	}
	// Another extension owns compaction for this model (docs/spec-notes.md, "Compaction ownership"): Pi's
	// compaction runs, at agent_settled, and the owner writes the summary.
	// The fallback stays on ctx.compact() at this turn_end.
	if (rt.S.externalModels.includes(modelId(ctx))) {
		if (reason === "fallback") rollOver(rt, ctx, reason);
		else rt.S.handOff = reason;
		return undefined;
	}
	await push(rt, ctx);
	const d = await rt.api.call("POST /v1/sessions/{id}/compaction", {
		path: { id: rt.S.sid },
		body: { leaf: leafOf(ctx), model: modelId(ctx), ours: true, reason, pi: piSettings(rt, ctx) },
	});
	const c = d?.compaction;
	if (!c) {
		if (reason !== "fallback") rt.S.handOff = reason;
		else await event(rt, ctx, { kind: "rollover_failed", why: "other" }); // Pi's threshold compaction takes the window
		return undefined;
	}
	rt.S.proposed = { summary: c.summary, reason };
	if (pausing(rt, reason)) {
		// /rollover: the checkpoint alone, and the run stops there.
		if (rt.S.preparing) rt.S.preparing.checkpointed = true;
		return {
			entries: [...proposal, { type: "compaction", summary: c.summary, firstKeptEntryId: c.firstKeptEntryId, details: c.details }],
			continue: false,
		};
	}
	const text = continuation(c.details.windowNumber, c.details.reason ?? reason, hasIndex(c.summary));
	return {
		entries: [
			...proposal,
			{ type: "compaction", summary: c.summary, firstKeptEntryId: c.firstKeptEntryId, details: c.details },
			{ type: "custom_message", customType: CONTINUE_TYPE, content: text, display: true },
		],
		continue: true,
	};
}

/**
 * Tells the service what became of the compaction proposed at the last
 * boundary (Pi commits proposals after every handler ran, and may reject
 * them), and about any other compaction that reached the branch without
 * session_compact (another extension's boundary entry).
 */
export async function reconcile(rt: Runtime, ctx: ExtensionContext): Promise<void> {
	const last = lastCompactionEntry(ctx);
	const proposed = rt.S.proposed;
	rt.S.proposed = undefined;
	if (proposed && !(last && last.summary === proposed.summary)) {
		// A /rollover checkpoint Pi did not commit is not one.
		if (rt.S.preparing) rt.S.preparing.checkpointed = false;
		await event(rt, ctx, { kind: "rollover_failed", why: "boundary_rejected" });
	}
	if (last && last.id !== rt.S.lastCompaction) {
		rt.S.lastCompaction = last.id;
		await event(rt, ctx, { kind: "compaction" });
	}
}
