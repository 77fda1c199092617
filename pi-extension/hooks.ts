// The hooks: what happens in Pi reported to the service, and its answers
// applied. Guidance in the system prompt; entry-id trailers in the context;
// the status line on other tools' results; the tool-call guard; the state
// machine's events at each turn and at the end of each run, and the
// rollovers they decide (rollover.ts); the template summary in
// session_before_compact (the emergency rollover on Pi's overflow); the
// bookkeeping after a compaction or /tree; seed B's settings read at
// session_start; input held during a preparation; and what arms, moves and
// stops the idle rollover (idle.ts).

import type { AgentMessage } from "./messages.ts";
import { entryIds, lastCompactionOf, lastTextIndex, messageKey, record, takesTrailer, withTrailer } from "./messages.ts";
import { show } from "./context.ts";
import { armIdle, cancelIdle, onWarmingDecision } from "./idle.ts";
import { endPreparation, holdInput, redirectCompact } from "./prepare.ts";
import { boundaryRollover, MAINTENANCE_TYPE, reconcile, rollOver, steer } from "./rollover.ts";
import { applyEnabled, event, leafOf, loadConfig, modelId, OUR_TOOLS, push, stale } from "./session.ts";
import type { Runtime } from "./state.ts";
import { readContextManagement } from "./settings.ts";
import { SessionState } from "./state.ts";
import { GUIDANCE, GUIDANCE_BODY, GUIDANCE_SECTION, neutralMaintenance, statusSep, trailer } from "./text.ts";

/** Registers every hook of the extension. */
export function registerHooks(rt: Runtime): void {
	registerSessionHooks(rt);
	registerMessageHooks(rt);
	registerRunHooks(rt);
	registerCompactionHooks(rt);
	registerIdleHooks(rt);
}

/** session_start, the guidance, the input hold and /tree. */
function registerSessionHooks(rt: Runtime): void {
	const pi = rt.pi;
	pi.on("session_start", async (_ev, ctx) => {
		cancelIdle(rt);
		rt.S = new SessionState();
		rt.S.sid = ctx.sessionManager.getSessionId();
		rt.S.lastCompaction = lastCompactionOf(ctx);
		// contextManagement in Pi's settings: read once per session load,
		// each problem reported once.
		const { cm, warnings } = readContextManagement(ctx);
		rt.S.cm = cm;
		for (const w of warnings) show(ctx, w, "warning");
		await rt.quietly(async () => {
			await push(rt, ctx);
			await loadConfig(rt);
			// The service outlives Pi: what it held for this session (a
			// pending rollover, maintenance under way) must not carry over
			// into a resumed or reloaded one.
			await event(rt, ctx, { kind: "session_start" });
		});
	});

	// The guidance: on Pi 1.6 a section of the structured prompt (recorded in
	// the journal, patched in place, the prompt cache kept); on 0.73.1
	// appended to the prompt.
	pi.on("before_agent_start", async (ev) => {
		await rt.quietly(() => loadConfig(rt, true));
		applyEnabled(rt);
		if (rt.disabled) return undefined;
		const sections = ev.systemPromptOptions?.sections;
		if (sections && typeof sections === "object") {
			rt.caps.sections = true;
			sections[GUIDANCE_SECTION] = GUIDANCE_BODY;
			return undefined;
		}
		return { systemPrompt: `${ev.systemPrompt}\n\n${GUIDANCE}` };
	});

	// Pi 0.73.1: a prompt typed while a rollover of this extension is decided
	// or compacts waits until the new window is open, instead of being lost
	// (Pi disconnects the agent while it compacts). Input typed during a run
	// (a steer) is not held up: the run's end decides the rollover. (Pi 1.6
	// refuses a prompt during a compaction before this hook runs; there
	// agent_settled holds instead, see below.) Input typed while a /rollover
	// or idle preparation runs is held until it is over (prepare.ts).
	pi.on("input", async (ev, ctx) => {
		if (stale(ctx)) return undefined;
		cancelIdle(rt);
		if (ev.source !== "extension") rt.S.idleTried = false; // the user's own input re-arms the idle rollover
		// Typed while a preparation runs: held until it is over (prepare.ts).
		if (holdInput(rt, ctx, ev)) return { action: "handled" as const };
		if (!ctx.isIdle()) return undefined;
		rt.promptsWaiting++;
		try {
			for (let i = 0; i < 600 && (rt.S.running || rt.S.ourCompaction); i++) {
				if (rt.S.ourCompaction && rt.rolloverDone) await rt.rolloverDone;
				else await new Promise((r) => setTimeout(r, 50));
			}
		} finally {
			rt.promptsWaiting--;
		}
		return undefined;
	});

	pi.on("session_tree", async () => {
		cancelIdle(rt);
		rt.S.branchChanged = true;
	});
}

/** The context trailers, the status line on other tools' results and the tool-call guard. */
function registerMessageHooks(rt: Runtime): void {
	const pi = rt.pi;
	// Entry-id trailers; stale maintenance messages shown as done.
	pi.on("context", async (ev, ctx) => {
		if (rt.service.knownDown() || rt.disabled || stale(ctx)) return undefined; // ids nobody can read back
		const ids = entryIds(ctx);
		const active = rt.S.rollover?.active ?? 0;
		let changed = false;
		const messages = ev.messages.map((m): AgentMessage => {
			if (m.role === "assistant") return m;
			let msg = m;
			if (m.role === "custom" && m.customType === MAINTENANCE_TYPE) {
				const attempt = record(m.details)?.attempt;
				if (attempt && attempt !== active) {
					msg = { ...m, content: neutralMaintenance(Number(attempt)) };
					changed = true;
				}
			}
			if (!takesTrailer(msg)) return msg;
			const id = ids.get(messageKey(m));
			if (!id) return msg;
			changed = true;
			return withTrailer(msg, trailer(id));
		});
		return changed ? { messages } : undefined;
	});

	// The staleness line on other tools' successful results.
	pi.on("tool_result", async (ev, ctx) => {
		if (OUR_TOOLS.has(ev.toolName) || ev.isError || rt.disabled || stale(ctx)) return undefined;
		const content = ev.content;
		const last = lastTextIndex(content);
		if (last < 0) return undefined; // no text part: the tick stays armed
		const st = await rt.quietly(async () => {
			await push(rt, ctx);
			await loadConfig(rt);
			const tokens = ctx.getContextUsage()?.tokens ?? null;
			const S = rt.S;
			const ext = S.externalModels.includes(modelId(ctx)) && S.externalShownWindow !== (S.rollover?.window ?? 1);
			const ask = (delivered: number) =>
				rt.api.call("POST /v1/sessions/{id}/status", {
					path: { id: rt.S.sid },
					body: { leaf: leafOf(ctx), contextTokens: tokens, branchChanged: rt.S.branchChanged, externalCompaction: ext, deliveredStep: delivered },
				});
			let r = await ask(rt.S.delivered.get(rt.S.knownRecord) ?? 0);
			if ((r.recordId ?? "") !== rt.S.knownRecord) {
				rt.S.knownRecord = r.recordId ?? "";
				r = await ask(rt.S.delivered.get(rt.S.knownRecord) ?? 0);
			}
			return r;
		});
		if (!st?.due || !st.text) return undefined;
		const S = rt.S;
		if (st.step) S.delivered.set(st.recordId ?? "", Math.max(st.step, S.delivered.get(st.recordId ?? "") ?? 0));
		if (st.branchChanged) S.branchChanged = false;
		if (st.externalCompaction) S.externalShownWindow = S.rollover?.window ?? 1;
		const next = content.slice();
		const part = next[last];
		if (part.type === "text") next[last] = { ...part, text: `${part.text}${statusSep}${st.text}` };
		// Pi 1.6 drops a result's structuredContent when a handler replaces
		// its content without it (read and bash declare one): hand it back.
		const structured = ev.structuredContent;
		return structured === undefined ? { content: next } : { content: next, structuredContent: structured };
	});

	// The tool-call guard while a notes checkpoint is required.
	pi.on("tool_call", async (ev, ctx) => {
		if (rt.S.rollover?.stage !== "requested" || stale(ctx)) return undefined;
		const r = await rt.quietly(() => event(rt, ctx, { kind: "tool_call", tool: ev.toolName }));
		if (r?.decision.block) return { block: true, reason: r.decision.blockReason };
		return undefined;
	});
}

/** Whether the run that produced messages was aborted (its last assistant message says so). */
function lastAssistantAborted(messages: readonly AgentMessage[] | undefined): boolean {
	for (let i = (messages?.length ?? 0) - 1; i >= 0; i--) {
		const m = messages![i];
		if (m.role === "assistant") return m.stopReason === "aborted";
	}
	return false;
}

/** The run's events: agent_start, turn_start/turn_end and the end of the run (agent_end on 0.73.1; agent_before_settle and agent_settled on 1.6). */
function registerRunHooks(rt: Runtime): void {
	const pi = rt.pi;
	pi.on("agent_start", async (_ev, ctx) => {
		cancelIdle(rt);
		if (stale(ctx)) return;
		rt.S.running = true;
		await rt.quietly(async () => {
			await reconcile(rt, ctx);
			await event(rt, ctx, { kind: "agent_start" });
		});
	});

	pi.on("turn_start", async (_ev, ctx) => {
		if (stale(ctx) || !rt.S.proposed) return;
		await rt.quietly(() => reconcile(rt, ctx)); // the boundary's continuation request
	});

	pi.on("turn_end", async (ev, ctx) => {
		if (stale(ctx)) return undefined;
		// A host with actionable boundaries hands turn_end the proposal so far.
		if (Array.isArray(ev.entries) && typeof ev.continue === "boolean") rt.caps.boundary = true;
		const m = ev.message;
		const aborted = !!ctx.signal?.aborted || (m?.role === "assistant" && m.stopReason === "aborted") || ev.outcome === "aborted";
		const r = await rt.quietly(() => event(rt, ctx, { kind: "turn_end", aborted }));
		if (!r) return undefined;
		steer(rt, r.decision);
		const reason = r.decision.rollOver;
		if (!reason) return undefined;
		if (!rt.caps.boundary) {
			rollOver(rt, ctx, reason);
			return undefined;
		}
		return rt.quietly(() => boundaryRollover(rt, ctx, reason, ev));
	});

	// Pi 0.73.1: the run is over; model, user and host rollovers start here.
	// (On Pi 1.6 agent_end is not final: agent_before_settle is.)
	pi.on("agent_end", async (ev, ctx) => {
		if (rt.caps.boundary || stale(ctx)) return;
		const aborted = !!ctx.signal?.aborted || lastAssistantAborted(ev.messages);
		const r = await rt.quietly(() => event(rt, ctx, { kind: "settle", aborted }));
		rt.S.running = false;
		if (r?.decision.rollOver) rollOver(rt, ctx, r.decision.rollOver);
		// A /rollover preparation ends with this run; its compaction, when
		// one started, reports the checkpoint once it is over.
		if (rt.S.ourCompaction !== "user") endPreparation(rt, ctx);
	});

	// Pi 1.6: the last actionable boundary of a run that was not aborted
	// (an aborted one goes straight to agent_settled). The service re-checks
	// a host schedule here; a rollover still due is returned as entries.
	pi.on("agent_before_settle", async (ev, ctx) => {
		if (stale(ctx)) return undefined;
		rt.caps.boundary = true;
		return rt.quietly(async () => {
			await reconcile(rt, ctx);
			const r = await event(rt, ctx, { kind: "settle", aborted: !!ctx.signal?.aborted });
			if (!r.decision.rollOver) return undefined;
			return boundaryRollover(rt, ctx, r.decision.rollOver, ev);
		});
	});

	// Pi 1.6: the run is over for good. An aborted run reports its abort here
	// (a model or host schedule is cancelled); a schedule the boundary handed
	// on (declined template, external owner) goes to Pi's compaction, as on
	// 0.73.1, and the handler waits for it.
	pi.on("agent_settled", async (ev, ctx) => {
		if (stale(ctx)) return;
		await rt.quietly(async () => {
			await reconcile(rt, ctx);
			let handOff = rt.S.handOff;
			rt.S.handOff = undefined;
			if (ev?.aborted) {
				const r = await event(rt, ctx, { kind: "settle", aborted: true });
				handOff = r.decision.rollOver;
			}
			rt.S.running = false;
			if (!handOff) {
				endPreparation(rt, ctx);
				if (!ev?.aborted) armIdle(rt, ctx);
				return;
			}
			rollOver(rt, ctx, handOff);
			// Pi 1.6 defers a prompt sent while agent_settled handlers run,
			// and refuses one sent while a compaction runs: holding this
			// handler until the compaction is over turns the second into
			// the first.
			await rt.rolloverDone;
			endPreparation(rt, ctx);
		});
		rt.S.running = false;
	});
}

/** session_before_compact (the template summary) and session_compact. */
function registerCompactionHooks(rt: Runtime): void {
	const pi = rt.pi;
	pi.on("session_before_compact", async (ev, ctx) => {
		// Pi 1.6's reason tells the user's /compact apart (0.73.1 has none).
		const why: unknown = Reflect.get(ev, "reason");
		if (why === "manual") await rt.quietly(() => loadConfig(rt, true));
		if (redirectCompact(rt, ctx, typeof why === "string" ? why : undefined, ev.customInstructions)) return { cancel: true };
		// Pi 1.6's native context overflow (a refused request or a
		// truncated response): the Emergency Rollover, at Pi's own cut,
		// with no request of its own (decision 310).
		const overflow = why === "overflow";
		const d = await rt.quietly(async () => {
			await push(rt, ctx, ev.signal); // a hung service must not hold Pi's compaction up
			const S = rt.S;
			// A rollover of ours with a Tail of its own: the service cuts
			// (0.73.1 hands Pi's keepRecentTokens cut here).
			const ownCut = S.ourCompaction !== undefined && S.cm.tailTokens !== undefined && !overflow;
			return rt.api.call("POST /v1/sessions/{id}/compaction", {
				path: { id: S.sid },
				body: {
					leaf: leafOf(ctx),
					firstKeptEntryId: ownCut ? undefined : ev.preparation.firstKeptEntryId,
					customInstructions: ev.customInstructions || undefined,
					model: modelId(ctx),
					ours: S.ourCompaction !== undefined,
					// Pi's threshold compaction inside a run (docs/spec-notes.md, "Implementation notes") gets Pi's
					// summary, never the template.
					midRun: !overflow && S.ourCompaction === undefined && S.running && ev.reason !== "manual" ? true : undefined,
					reason: overflow ? "emergency" : S.ourCompaction,
					pi: {
						keepRecentTokens: ev.preparation.settings.keepRecentTokens,
						reserveTokens: ev.preparation.settings.reserveTokens,
						tailTokens: S.cm.tailTokens,
					},
				},
				signal: ev.signal,
			});
		});
		if (!d?.compaction) return undefined; // Pi's own summary (or another extension's) runs
		return { compaction: d.compaction };
	});

	pi.on("session_compact", async (ev, ctx) => {
		cancelIdle(rt);
		if (stale(ctx)) return;
		rt.S.lastCompaction = lastCompactionOf(ctx);
		if (record(ev?.compactionEntry?.details)?.reason === "emergency") {
			show(ctx, "Emergency rollover: the context overflowed; the new window carries the notes and the last saved Handoff, marked stale. Recent work is readable with history.", "warning");
		}
		// Compaction ownership (docs/spec-notes.md): a compaction that carries both this extension's
		// details and a remote compaction's means two extensions acted.
		const d = record(ev?.compactionEntry?.details);
		if (d && d.remoteCompaction !== undefined && d.windowNumber !== undefined) {
			const msg = "pi-history: this compaction holds both pi-history's rollover summary and another extension's remote compaction (details.remoteCompaction); list the model in externalCompactionModels so only one of them compacts.";
			if (ctx.hasUI) ctx.ui.notify(msg, "warning");
			else console.warn(msg);
		}
		await rt.quietly(() => event(rt, ctx, { kind: "compaction" }));
	});
}

/** What stops the idle rollover's timer, and Pi's cache-warming decisions it follows (idle.ts). */
function registerIdleHooks(rt: Runtime): void {
	const pi = rt.pi;
	const stop = async () => cancelIdle(rt);
	pi.on("turn_start", stop);
	pi.on("model_select", stop);
	pi.on("thinking_level_select", stop);
	pi.on("session_shutdown", stop);
	pi.on("cache_warming_decision", async (ev) => {
		onWarmingDecision(rt, ev.action);
		return undefined; // Pi's own decision stands
	});
}
