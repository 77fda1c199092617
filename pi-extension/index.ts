// pi-history's Pi extension: the notes, new_context and history tools and the
// context-window hooks. Every decision and all storage belong to the
// pi-history service (see service.ts); this file reports what happens in Pi,
// applies the service's answers, and keeps the service's copy of the session
// current before asking it anything.
//
// Pi 1.6 first, Pi 0.73.1 still: what the host offers is learned at run time
// (see Caps) and every capability is off until it is seen, so an unknown
// host gets the 0.73.1 behaviour. On a host with actionable boundaries
// (turn_end and agent_before_settle return entries) a rollover is a
// compaction entry plus a continuation message returned from
// agent_before_settle (model, user, host) or from the turn_end of the
// checkpoint (fallback), written inside the run with continue: true. On
// 0.73.1 it is ctx.compact() (this extension then supplies the summary in
// session_before_compact) followed by a continuation message that starts the
// next request, at agent_end or at the checkpoint's turn_end.

import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { getAgentDir, SettingsManager } from "@mariozechner/pi-coding-agent";
import { StringEnum } from "@mariozechner/pi-ai";
import { Type } from "typebox";
import { existsSync } from "node:fs";
import { ApiError, optionsFromEnv, Service, ServiceDown } from "./service.ts";
import {
	continuation,
	continuationOwnSummary,
	GUIDANCE_BODY,
	GUIDANCE_SECTION,
	failureWhy,
	GUIDANCE,
	HISTORY_DESCRIPTION,
	NEW_CONTEXT_DESCRIPTION,
	neutralMaintenance,
	NOTES_DESCRIPTION,
	statusSep,
	trailer,
} from "./text.ts";

const NOTEBOOK_TYPE = "note-context/notebook";
const MAINTENANCE_TYPE = "note-context/maintenance";
const CONTINUE_TYPE = "note-context/continue";
const OUR_TOOLS = new Set(["notes", "new_context", "history"]);

interface RolloverState {
	window: number;
	pending?: string;
	stage?: string;
	active?: number;
}

/**
 * What the host Pi offers, learned at run time. Each flag starts false and is
 * set only when the host shows the capability (fail closed): a host that
 * shows nothing gets the Pi 0.73.1 behaviour.
 */
interface Caps {
	/** turn_end carries the boundary proposal (entries, continue): compactions are returned as entries (Pi ≥ 1.6). */
	boundary: boolean;
	/** before_agent_start offers systemPromptOptions.sections: guidance is a prompt section, not a replaced prompt. */
	sections: boolean;
	/** pi.getSettings exists (Pi ≥ 1.6): Pi's merged settings, and tools may return isError and structuredContent. */
	settings: boolean;
}

interface Decision {
	steer?: string;
	steerType?: string;
	attempt?: number;
	block?: boolean;
	blockReason?: string;
	toolText?: string;
	schedule?: string;
	gate?: { ok: boolean; blocker?: string; text: string; externalOwner?: boolean };
	rollOver?: string;
	cancel?: string;
	giveUp?: boolean;
}

/** Per-session volatile state; rebuilt on every session_start. */
class SessionState {
	sid = "";
	headerPushed = false;
	pushed = new Set<string>();
	registeredFile = "";
	rollover?: RolloverState;
	delivered = new Map<string, number>(); // notebook record id ("" = none) → highest status step shown
	knownRecord = "";
	branchChanged = false;
	externalShownWindow = 0;
	ourCompaction?: string; // the reason of the compaction this extension started
	externalModels: string[] = [];
	// The request behind each cursor the history tool handed out: the next
	// page is asked with it (the leaf moves with every message, and a
	// cursor is bound to the request it came from), so a cursor alone is a
	// whole call. The last maxCursors are kept.
	cursors = new Map<string, { kind: "search" | "list"; req: any }>();
	configLoaded = false;
	// A run is under way (agent_start until the settle hook has decided).
	running = false;
	// The compaction this extension returned as a boundary entry, until it
	// is seen on the branch (or not): the service is told at the next hook.
	proposed?: { summary: string; reason: string };
	// The last compaction on the branch the service was told about.
	lastCompaction = "";
	// A schedule the boundary could not carry out (the template was
	// declined): agent_settled hands it to ctx.compact(), as on 0.73.1.
	handOff?: string;
}

export default function piHistory(pi: ExtensionAPI) {
	const svc = new Service(optionsFromEnv());
	let S = new SessionState();
	const caps: Caps = { boundary: false, sections: false, settings: typeof (pi as any).getSettings === "function" };
	// Settles when the rollover this extension started through ctx.compact()
	// is over (continuation sent or dropped); a prompt typed meanwhile waits
	// for it in the input hook.
	let rolloverDone: Promise<void> | undefined;
	let promptsWaiting = 0;
	// Non-empty (the configuration file's path) while the configuration says
	// enabled: false; toolsRemoved are the tools that took out of the active set.
	let disabled = "";
	let toolsRemoved: string[] = [];

	// Hook work in flight, so tests (and shutdown) can wait for it.
	let inflight = 0;
	let waiters: Array<() => void> = [];
	const track = async <T>(fn: () => Promise<T>): Promise<T> => {
		inflight++;
		try {
			return await fn();
		} finally {
			inflight--;
			if (inflight === 0) {
				const w = waiters;
				waiters = [];
				for (const f of w) f();
			}
		}
	};
	(globalThis as any)[Symbol.for("pi-history.extension")] = {
		idle: () => (inflight === 0 ? Promise.resolve() : new Promise<void>((r) => waiters.push(r))),
		busy: () => inflight > 0 || S.ourCompaction !== undefined,
		service: svc,
		caps,
	};

	// ---- keeping the service current ----

	/** Stores every entry of the session the service has not seen yet. */
	async function push(ctx: ExtensionContext, signal?: AbortSignal): Promise<void> {
		const sm = ctx.sessionManager;
		const sid = sm.getSessionId();
		if (sid !== S.sid) {
			S = new SessionState();
			S.sid = sid;
			S.lastCompaction = lastCompactionOf(ctx);
		}
		const lines: string[] = [];
		const ids: string[] = [];
		if (!S.headerPushed) {
			const h = sm.getHeader();
			if (h) lines.push(JSON.stringify(h));
		}
		for (const e of sm.getEntries() as any[]) {
			if (S.pushed.has(e.id)) continue;
			lines.push(JSON.stringify(e));
			ids.push(e.id);
		}
		const file = sm.getSessionFile();
		if (lines.length > 0) {
			try {
				await svc.request("POST", `/v1/sessions/${enc(sid)}/entries`, { body: { lines }, signal });
			} catch (e) {
				if (!(e instanceof ApiError) || !file || !existsSync(file)) throw e;
				// The service holds something else for these ids (the file was
				// rewritten, say): read the journal itself instead.
				await svc.request("POST", `/v1/sessions/${enc(sid)}/sync`, { body: { path: file }, signal });
			}
			S.headerPushed = true;
			for (const id of ids) S.pushed.add(id);
		}
		if (file && S.registeredFile !== file && existsSync(file)) {
			// Register the journal path (Pi writes the file only once the
			// first assistant message exists).
			try {
				await svc.request("POST", `/v1/sessions/${enc(sid)}/sync`, { body: { path: file }, signal });
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
	 * 0.73.1 from its settings files. Undefined values get Pi's documented
	 * defaults from the service.
	 */
	function piSettings(ctx: ExtensionContext): { keepRecentTokens?: number; reserveTokens?: number } | undefined {
		try {
			if (caps.settings) {
				const c: any = (pi as any).getSettings()?.compaction ?? {};
				const m = ctx.model;
				const o: any = (m && c.modelOverrides?.[`${m.provider}/${m.id}`]) ?? {};
				return { keepRecentTokens: o.keepRecentTokens ?? c.keepRecentTokens, reserveTokens: o.reserveTokens ?? c.reserveTokens };
			}
			const s = SettingsManager.create(ctx.cwd, getAgentDir()).getCompactionSettings();
			return { keepRecentTokens: s.keepRecentTokens, reserveTokens: s.reserveTokens };
		} catch {
			return undefined; // the service uses Pi's documented defaults
		}
	}

	/**
	 * True when ctx belongs to a runtime Pi has replaced or shut down (a
	 * queued event that arrives after `pi -p` finished, say): touching it
	 * throws, so the hook does nothing.
	 */
	function stale(ctx: ExtensionContext): boolean {
		try {
			void ctx.sessionManager;
			return false;
		} catch {
			return true;
		}
	}

	function usage(ctx: ExtensionContext) {
		const u = ctx.getContextUsage();
		if (!u) return undefined;
		return { tokens: u.tokens ?? null, contextWindow: u.contextWindow };
	}

	function modelId(ctx: ExtensionContext): string {
		const m = ctx.model;
		return m ? `${m.provider}/${m.id}` : "";
	}

	/** Reads the service's configuration once per session, or again when fresh (at the start of each run: the service re-reads its file when it changes). */
	async function loadConfig(fresh = false) {
		if (S.configLoaded && !fresh) return;
		const c = await svc.request("GET", "/v1/context/config");
		S.externalModels = c?.config?.externalCompactionModels ?? [];
		disabled = c?.config?.enabled === false ? c.path || "the configuration" : "";
		S.configLoaded = true;
	}

	/**
	 * With enabled: false the extension steps aside entirely: no guidance,
	 * no trailers, no status line, and its tools leave the active set (they
	 * come back when it is turned on again).
	 */
	function applyEnabled() {
		try {
			const active = pi.getActiveTools();
			if (disabled) {
				const mine = active.filter((n) => OUR_TOOLS.has(n));
				if (mine.length === 0) return;
				toolsRemoved = mine;
				pi.setActiveTools(active.filter((n) => !OUR_TOOLS.has(n)));
			} else if (toolsRemoved.length > 0) {
				pi.setActiveTools([...active, ...toolsRemoved.filter((n) => !active.includes(n))]);
				toolsRemoved = [];
			}
		} catch {
			// a host without tool selection: the tools refuse instead
		}
	}

	/** Reports one state-machine event and returns the decision. */
	async function event(ctx: ExtensionContext, ev: Record<string, unknown>): Promise<{ decision: Decision; notebook?: string }> {
		await push(ctx);
		const r = await svc.request("POST", `/v1/sessions/${enc(S.sid)}/events`, {
			body: { leaf: ctx.sessionManager.getLeafId() ?? "", event: ev, usage: usage(ctx), model: modelId(ctx), pi: piSettings(ctx) },
		});
		S.rollover = r.state;
		return { decision: r.decision ?? {}, notebook: r.notebook };
	}

	/** Sends a steer (reminder or maintenance message) into the run. */
	function steer(d: Decision) {
		if (!d.steer) return;
		pi.sendMessage(
			{ customType: d.steerType || MAINTENANCE_TYPE, content: d.steer, display: true, details: d.attempt ? { attempt: d.attempt } : undefined },
			{ deliverAs: "steer" },
		);
	}

	/** Carries out a rollover: Pi compacts (asking session_before_compact, where the service writes the summary), then a continuation message starts the next request. */
	function rollOver(ctx: ExtensionContext, reason: string) {
		if (S.ourCompaction) return;
		S.ourCompaction = reason;
		let finish!: () => void;
		rolloverDone = new Promise<void>((r) => (finish = r));
		const done = () => {
			S.ourCompaction = undefined;
			finish();
		};
		const resume = (content: string) => {
			// A prompt the user typed while Pi compacted starts the next run
			// itself (it waits in the input hook): a continuation started
			// now would race it, and the summary already says what happened.
			if (promptsWaiting > 0) return;
			try {
				pi.sendMessage({ customType: CONTINUE_TYPE, content, display: true }, { triggerTurn: true });
			} catch {
				// the session went away meanwhile
			}
		};
		ctx.compact({
			onComplete: (res: any) => {
				// Only the service's summary (it sets windowNumber) holds the
				// notebook; Pi's own, written when the service declined or
				// could not be reached, does not.
				const win = res?.details?.windowNumber;
				resume(win ? continuation(win, res?.details?.reason ?? reason, hasIndex(res?.summary)) : continuationOwnSummary(reason));
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
				void quietly(() => event(ctx, { kind: "rollover_failed", why }));
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
	async function boundaryRollover(ctx: ExtensionContext, reason: string, ev: any): Promise<any> {
		const proposal: any[] = Array.isArray(ev.entries) ? ev.entries : [];
		if (proposal.some((e) => e?.type === "compaction")) {
			await event(ctx, { kind: "rollover_failed", why: "other_compaction" });
			return undefined;
		}
		// Another extension owns compaction for this model (§5.1): Pi's
		// compaction runs, at agent_settled, and the owner writes the summary.
		// The fallback stays on ctx.compact() at this turn_end (design §5).
		if (S.externalModels.includes(modelId(ctx))) {
			if (reason === "fallback") rollOver(ctx, reason);
			else S.handOff = reason;
			return undefined;
		}
		await push(ctx);
		const d = await svc.request("POST", `/v1/sessions/${enc(S.sid)}/compaction`, {
			body: { leaf: ctx.sessionManager.getLeafId() ?? "", model: modelId(ctx), ours: true, reason, pi: piSettings(ctx) },
		});
		const c = d?.compaction;
		if (!c) {
			if (reason !== "fallback") S.handOff = reason;
			else await event(ctx, { kind: "rollover_failed", why: "other" }); // Pi's threshold compaction takes the window
			return undefined;
		}
		S.proposed = { summary: c.summary, reason };
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
	async function reconcile(ctx: ExtensionContext): Promise<void> {
		const last = lastCompactionEntry(ctx);
		const proposed = S.proposed;
		S.proposed = undefined;
		if (proposed && !(last && last.summary === proposed.summary)) {
			await event(ctx, { kind: "rollover_failed", why: "boundary_rejected" });
		}
		if (last && last.id !== S.lastCompaction) {
			S.lastCompaction = last.id;
			await event(ctx, { kind: "compaction" });
		}
	}

	/** Runs hook work against the service; does nothing when it is unreachable or fails. */
	async function quietly<T>(fn: () => Promise<T>): Promise<T | undefined> {
		return track(async () => {
			try {
				return await fn();
			} catch {
				return undefined;
			}
		});
	}

	// ---- tools ----

	/** The assistant entry that issued tool call id (it is persisted before the tool runs). */
	function callerEntry(ctx: ExtensionContext, toolCallId: string): string | undefined {
		const branch = ctx.sessionManager.getBranch() as any[];
		for (let i = branch.length - 1; i >= 0; i--) {
			const e = branch[i];
			if (e.type === "message" && e.message?.role === "assistant" && Array.isArray(e.message.content)) {
				if (e.message.content.some((b: any) => b.type === "toolCall" && b.id === toolCallId)) return e.id;
			}
		}
		return undefined;
	}

	/**
	 * Wraps a tool body: a missing service, an error status or a refusal
	 * becomes a failed result. Pi 1.6 takes a returned isError result (the
	 * details and structured content stay with it); Pi 0.73.1 ignores that
	 * flag, so there the error is thrown.
	 */
	async function tool(fn: () => Promise<any>): Promise<any> {
		return track(async () => {
			try {
				if (disabled) throw new Error(`pi-history's notes, new_context and history are turned off (enabled: false in ${disabled}).`);
				return await fn();
			} catch (e) {
				const msg = e instanceof Error ? e.message : String(e);
				if (!caps.settings) throw e instanceof ServiceDown || e instanceof ApiError ? new Error(msg) : e;
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
	 * structuredContent scripts receive (outputSchema below).
	 */
	const text = (t: string, details: Record<string, unknown> = {}) => {
		const r: any = { content: [{ type: "text" as const, text: t }], details };
		if (caps.settings) r.structuredContent = snake(details);
		return r;
	};
	// The structured result of notes and history: an object whose fields
	// depend on the call (the details of text() above, snake_cased).
	const outputSchema = Type.Object({}, { additionalProperties: true });

	pi.registerTool({
		name: "notes",
		label: "Notes",
		description: NOTES_DESCRIPTION,
		// Each write builds on the revision before it: two writes in one
		// message, run side by side, would both build on the same one and
		// the second would drop the first's sections.
		executionMode: "sequential",
		outputSchema,
		parameters: Type.Object({
			sections: Type.Optional(Type.Record(Type.String(), Type.String(), { description: "sections to replace; \"\" deletes one" })),
			replaceAll: Type.Optional(Type.Boolean({ description: "sections become the whole notebook" })),
			reviewed: Type.Optional(Type.Boolean({ description: "the current revision was reviewed and needs no change" })),
			expectedRevision: Type.Optional(Type.Integer({ minimum: 0, description: "fail unless this is the current revision" })),
			op: Type.Optional(StringEnum(["list", "read", "write", "append", "delete", "copy", "search", "revisions"], { description: "a named-note operation" })),
			name: Type.Optional(Type.String({ description: "note name" })),
			content: Type.Optional(Type.String({ description: "write: the note's new content" })),
			text: Type.Optional(Type.String({ description: "append: text to add" })),
			ref: Type.Optional(Type.String({ description: "read/copy: a reference context:<session>:<entry>" })),
			query: Type.Optional(Type.String({ description: "search: literal text" })),
			offset: Type.Optional(Type.Integer({ minimum: 0 })),
			limit: Type.Optional(Type.Integer({ minimum: 1 })),
			scope: Type.Optional(StringEnum(["branch", "lineage"])),
		}),
		async execute(toolCallId, params: any, signal, _onUpdate, ctx) {
			return tool(async () => {
				await push(ctx);
				const leaf = ctx.sessionManager.getLeafId() ?? "";
				const base = `/v1/sessions/${enc(S.sid)}`;
				if (params.op) return namedNote(base, leaf, params, signal);
				const writes = params.sections !== undefined || params.replaceAll || params.reviewed;
				if (!writes) {
					const v = await svc.request("GET", `${base}/notebook`, { query: { leaf }, signal });
					if (!v.exists) return text("No notes on this branch yet.", { exists: false });
					const nb = v.notebook;
					return text(
						`notebook revision ${nb.revision} (${nb.bytes} bytes, ~${nb.tokensEstimate} tokens, ${v.remainingBytes} bytes left)\n\n${v.text}`,
						{ revision: nb.revision },
					);
				}
				const u = ctx.getContextUsage();
				const body: Record<string, unknown> = { leaf, reviewedThrough: callerEntry(ctx, toolCallId) };
				if (u?.tokens != null) body.reviewedTokens = u.tokens;
				if (params.expectedRevision !== undefined) body.expectedRevision = params.expectedRevision;
				if (params.reviewed) body.reviewed = true;
				if (params.sections !== undefined) body.sections = params.sections;
				if (params.replaceAll) body.replaceAll = true;
				let w: any;
				try {
					w = await svc.request("POST", `${base}/notebook`, { body, signal });
				} catch (e) {
					if (e instanceof ApiError) {
						await quietly(() => event(ctx, { kind: "notes", notesOk: false, notesError: e.message }));
					}
					throw e;
				}
				pi.appendEntry(w.append.customType, w.append.data);
				let extra = "";
				const r = await quietly(() => event(ctx, { kind: "notes", notesOk: true }));
				if (r?.decision.toolText && r.decision.schedule) extra = `\n${r.decision.toolText}`;
				const res = w.result;
				return text(
					JSON.stringify({ revision: res.revision, bytes: res.bytes, tokensEstimate: res.tokensEstimate, remainingBytes: res.remainingBytes }) + extra,
					res,
				);
			});
		},
	});

	async function namedNote(base: string, leaf: string, p: any, signal?: AbortSignal) {
		const scope = p.scope;
		switch (p.op) {
			case "list": {
				const l = await svc.request("GET", `${base}/notes`, { query: { leaf, scope, offset: p.offset }, signal });
				const lines = l.notes.map((n: any) => `${n.name} (${n.characters} chars, ${n.updatedAt}) ${n.ref}${n.session && n.session !== S.sid ? ` session=${n.session}` : ""}`);
				return text((lines.join("\n") || "No named notes.") + footer(l.total, l.nextOffset), l);
			}
			case "read": {
				const n = await svc.request("GET", `${base}/notes/read`, { query: { leaf, scope, name: p.name, ref: p.ref, offset: p.offset, limit: p.limit }, signal });
				const more = n.nextOffset != null ? `\n[${n.totalCharacters} characters; continue with offset ${n.nextOffset}]` : "";
				return text(`${n.name} (${n.ref})\n\n${n.content}${more}`, { name: n.name, ref: n.ref, offset: n.offset, totalCharacters: n.totalCharacters });
			}
			case "search": {
				const s = await svc.request("GET", `${base}/notes/search`, { query: { leaf, scope, query: p.query, offset: p.offset }, signal });
				const lines = s.matches.map((m: any) => `${m.name} @${m.offset} ${m.ref}: ${m.preview}`);
				return text((lines.join("\n") || "No matches.") + footer(s.total, s.nextOffset), s);
			}
			case "revisions": {
				const r = await svc.request("GET", `${base}/notebook/revisions`, { query: { leaf }, signal });
				const lines = r.revisions.map(
					(v: any) =>
						`rev ${v.revision} [history entry=${v.entryId}] ${v.timestamp}${v.reviewOnly ? " reviewed" : ""} ${v.bytes} bytes` +
						(v.added?.length ? ` +${v.added.join(",")}` : "") +
						(v.changed?.length ? ` ~${v.changed.join(",")}` : "") +
						(v.removed?.length ? ` -${v.removed.join(",")}` : ""),
				);
				return text(lines.join("\n") || "No notebook revisions on this branch.", r);
			}
			default: {
				const r = await svc.request("POST", `${base}/notes`, {
					// scope applies to copy only (and to the reads above); the
					// service refuses it on other changes.
					body: { leaf, op: p.op, name: p.name, content: p.content, text: p.text, ref: p.ref, scope: p.op === "copy" ? scope : undefined },
					signal,
				});
				if (r.append) pi.appendEntry(r.append.customType, r.append.data);
				return text(JSON.stringify(r.result), r.result);
			}
		}
	}

	const footer = (total: number, next: number | null | undefined) => (next != null ? `\n[${total} in all; next page: offset ${next}]` : "");

	pi.registerTool({
		name: "new_context",
		label: "New context",
		description: NEW_CONTEXT_DESCRIPTION,
		parameters: Type.Object({
			userRequested: Type.Optional(Type.Boolean({ description: "the user explicitly asked for a fresh window" })),
		}),
		async execute(_id, params: any, _signal, _onUpdate, ctx) {
			return tool(async () => {
				const { decision } = await event(ctx, { kind: "new_context", userRequested: !!params.userRequested });
				if (!decision.schedule) throw new Error(decision.toolText || decision.gate?.text || "rollover refused");
				return text(decision.toolText || "rollover scheduled", { reason: decision.schedule });
			});
		},
	});

	pi.registerTool({
		name: "history",
		label: "History",
		description: HISTORY_DESCRIPTION,
		outputSchema,
		parameters: Type.Object({
			query: Type.Optional(Type.String({ description: "literal text to find" })),
			id: Type.Optional(Type.String({ description: "entry id to read" })),
			context: Type.Optional(Type.Integer({ minimum: 0, maximum: 20, description: "neighbours on each side (id)" })),
			list: Type.Optional(Type.Boolean()),
			windows: Type.Optional(Type.Boolean()),
			raw: Type.Optional(Type.Boolean({ description: "id: the recorded JSON line" })),
			window: Type.Optional(Type.Integer({ minimum: 1 })),
			scope: Type.Optional(StringEnum(["branch", "session", "lineage", "all"])),
			session: Type.Optional(Type.String({ description: "id: the session holding the entry (from a search hit)" })),
			roles: Type.Optional(Type.Array(Type.String())),
			types: Type.Optional(Type.Array(Type.String())),
			limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
			offset: Type.Optional(Type.Integer({ minimum: 0, description: "id: character offset" })),
			cursor: Type.Optional(Type.String({ description: "next page of a query or list: the cursor it gave (enough on its own)" })),
		}),
		async execute(toolCallId, p: any, signal, _onUpdate, ctx) {
			return tool(async () => {
				await push(ctx);
				const leaf = ctx.sessionManager.getLeafId() ?? "";
				const self = callerEntry(ctx, toolCallId);
				const base = `/v1/sessions/${enc(S.sid)}`;
				if (p.id) {
					const sid = p.session || S.sid;
					const r = await svc.request("GET", `/v1/sessions/${enc(sid)}/entries/${enc(p.id)}`, {
						query: { context: p.context ?? 1, offset: p.offset, raw: p.raw, allowlisted: true },
						signal,
					});
					const out: string[] = [];
					for (const it of r.before ?? []) out.push(`  before: ${itemLine(it)}`);
					out.push(`${r.ref} ${r.item.type}${r.item.role ? `/${r.item.role}` : ""}${r.item.toolName ? ` (${r.item.toolName})` : ""} w${r.item.window} ${r.item.timestamp}`);
					out.push(r.text);
					if (r.nextOffset) out.push(`[${r.totalChars} characters; continue with offset ${r.nextOffset}]`);
					for (const it of r.after ?? []) out.push(`  after: ${itemLine(it)}`);
					return text(out.join("\n"), { entry: r.item.entry });
				}
				const prior = p.cursor ? S.cursors.get(p.cursor) : undefined;
				if (p.query || prior?.kind === "search") {
					// A cursor continues the request it came from (unless the
					// call names another needle: the service then says the
					// cursor does not fit).
					const same = prior?.kind === "search" && (!p.query || p.query === prior.req.needle);
					const asked = p.scope || "branch";
					const body = same
						? { ...prior.req, cursor: p.cursor }
						: {
								needle: p.query,
								scope: asked,
								session: asked === "all" ? undefined : S.sid,
								leaf: asked === "branch" ? leaf : undefined,
								window: p.window,
								roles: p.roles,
								types: p.types,
								limit: p.limit ?? 10,
								cursor: p.cursor,
								budget: 6000,
							};
					const scope = body.scope;
					const r = await svc.request("POST", "/v1/search", { body, signal });
					if (r.cursor) remember(r.cursor, "search", { ...body, cursor: undefined });
					const hits = (r.hits ?? []).filter((h: any) => !(h.entry === self && h.session === S.sid));
					const out = hits.map((h: any) => {
						const who = h.role ? h.role : h.type;
						const snip = (h.snippets ?? []).map((s: any) => s.text.replace(/\s+/g, " ")).join(" … ");
						const where = h.session !== S.sid ? ` session=${h.session}` : "";
						return `${h.ref} w${h.window} ${who}${h.toolName ? `(${h.toolName})` : ""}${where}: ${snip}`;
					});
					if (out.length === 0) out.push(`No entry contains ${JSON.stringify(body.needle)} in scope ${scope}${filtersNote(body)}.`);
					if (r.cursor) out.push(`[more hits: call history with cursor "${r.cursor}"]`);
					return text(out.join("\n"), { hits: hits.length, cursor: r.cursor });
				}
				if (p.windows) {
					const r = await svc.request("GET", `${base}/windows`, { query: { leaf, allowlisted: true }, signal });
					const out = r.windows.map((w: any) => `w${w.window} ${w.startedBy} ${w.entries} entries [history entry=${w.firstEntry}] … [history entry=${w.lastEntry}]`);
					return text(out.join("\n"), r);
				}
				if (p.list || prior?.kind === "list") {
					const query = prior?.kind === "list" ? { ...prior.req, cursor: p.cursor } : { leaf, window: p.window, roles: p.roles, types: p.types, limit: p.limit ?? 50, cursor: p.cursor, allowlisted: true };
					const r = await svc.request("GET", `${base}/entries`, { query, signal });
					if (r.cursor) remember(r.cursor, "list", { ...query, cursor: undefined });
					const out = r.items.map(itemLine);
					if (r.cursor) out.push(`[${r.total} entries; next page: call history with cursor "${r.cursor}"]`);
					return text(out.join("\n") || "No entries.", { total: r.total, cursor: r.cursor });
				}
				if (p.cursor) throw new Error("history: this cursor was not handed out in this session (or is too old to be remembered); repeat the query or list call that gave it, with the cursor");
				throw new Error("history needs one of query, id, list, windows or cursor");
			});
		},
	});

	const maxCursors = 50;
	function remember(cursor: string, kind: "search" | "list", req: any) {
		S.cursors.set(cursor, { kind, req });
		while (S.cursors.size > maxCursors) S.cursors.delete(S.cursors.keys().next().value as string);
	}

	/** The filters of a search, for a message that says nothing matched under them. */
	function filtersNote(b: any): string {
		const f: string[] = [];
		if (b.window) f.push(`window ${b.window}`);
		if (b.roles?.length) f.push(`roles ${b.roles.join(",")}`);
		if (b.types?.length) f.push(`types ${b.types.join(",")}`);
		return f.length ? ` with ${f.join(", ")} (try without them)` : "";
	}

	const itemLine = (it: any) => `[history entry=${it.entry}] w${it.window} ${it.preview}`;

	// ---- hooks ----

	pi.on("session_start", async (_ev, ctx) => {
		S = new SessionState();
		S.sid = ctx.sessionManager.getSessionId();
		S.lastCompaction = lastCompactionOf(ctx);
		await quietly(async () => {
			await push(ctx);
			await loadConfig();
			// The service outlives Pi: what it held for this session (a
			// pending rollover, maintenance under way) must not carry over
			// into a resumed or reloaded one.
			await event(ctx, { kind: "session_start" });
		});
	});

	// The guidance: on Pi 1.6 a section of the structured prompt (recorded in
	// the journal, patched in place, the prompt cache kept); on 0.73.1
	// appended to the prompt.
	pi.on("before_agent_start", async (ev: any) => {
		await quietly(() => loadConfig(true));
		applyEnabled();
		if (disabled) return undefined;
		const sections = ev.systemPromptOptions?.sections;
		if (sections && typeof sections === "object") {
			caps.sections = true;
			sections[GUIDANCE_SECTION] = GUIDANCE_BODY;
			return undefined;
		}
		return { systemPrompt: `${ev.systemPrompt}\n\n${GUIDANCE}` };
	});

	pi.on("agent_start", async (_ev, ctx) => {
		if (stale(ctx)) return;
		S.running = true;
		await quietly(async () => {
			await reconcile(ctx);
			await event(ctx, { kind: "agent_start" });
		});
	});

	// Pi 0.73.1: a prompt typed while a rollover of this extension is decided
	// or compacts waits until the new window is open, instead of being lost
	// (Pi disconnects the agent while it compacts). Input typed during a run
	// (a steer) is not held up: the run's end decides the rollover. (Pi 1.6
	// refuses a prompt during a compaction before this hook runs; there
	// agent_settled holds instead, see below.)
	pi.on("input", async (_ev, ctx) => {
		if (stale(ctx) || !ctx.isIdle()) return undefined;
		promptsWaiting++;
		try {
			for (let i = 0; i < 600 && (S.running || S.ourCompaction); i++) {
				if (S.ourCompaction && rolloverDone) await rolloverDone;
				else await new Promise((r) => setTimeout(r, 50));
			}
		} finally {
			promptsWaiting--;
		}
		return undefined;
	});

	// Entry-id trailers; stale maintenance messages shown as done.
	pi.on("context", async (ev, ctx) => {
		if (svc.knownDown() || disabled || stale(ctx)) return undefined; // ids nobody can read back
		const ids = new Map<string, string>();
		for (const e of ctx.sessionManager.getBranch() as any[]) {
			if (e.type === "message") {
				const m = e.message;
				ids.set(`${m.role}:${m.timestamp}:${m.toolCallId ?? ""}`, e.id);
			} else if (e.type === "custom_message") {
				ids.set(`custom:${new Date(e.timestamp).getTime()}:`, e.id);
			} else if (e.type === "compaction") {
				ids.set(`compactionSummary:${new Date(e.timestamp).getTime()}:`, e.id);
			} else if (e.type === "branch_summary") {
				ids.set(`branchSummary:${new Date(e.timestamp).getTime()}:`, e.id);
			}
		}
		const active = S.rollover?.active ?? 0;
		let changed = false;
		const messages = ev.messages.map((m: any) => {
			if (m.role === "assistant") return m;
			let msg = m;
			if (m.role === "custom" && m.customType === MAINTENANCE_TYPE && m.details?.attempt && m.details.attempt !== active) {
				msg = { ...m, content: neutralMaintenance(m.details.attempt) };
				changed = true;
			}
			if (!["user", "toolResult", "custom", "compactionSummary", "branchSummary"].includes(m.role)) return msg;
			const id = ids.get(`${m.role}:${m.timestamp}:${m.toolCallId ?? ""}`);
			if (!id) return msg;
			changed = true;
			return withTrailer(msg, trailer(id));
		});
		return changed ? { messages } : undefined;
	});

	// The staleness line on other tools' successful results.
	pi.on("tool_result", async (ev, ctx) => {
		if (OUR_TOOLS.has(ev.toolName) || ev.isError || disabled || stale(ctx)) return undefined;
		const content = ev.content as any[];
		const last = lastTextIndex(content);
		if (last < 0) return undefined; // no text part: the tick stays armed
		const st = await quietly(async () => {
			await push(ctx);
			await loadConfig();
			const tokens = ctx.getContextUsage()?.tokens ?? null;
			const ext = S.externalModels.includes(modelId(ctx)) && S.externalShownWindow !== (S.rollover?.window ?? 1);
			const ask = (delivered: number) =>
				svc.request("POST", `/v1/sessions/${enc(S.sid)}/status`, {
					body: { leaf: ctx.sessionManager.getLeafId() ?? "", contextTokens: tokens, branchChanged: S.branchChanged, externalCompaction: ext, deliveredStep: delivered },
				});
			let r = await ask(S.delivered.get(S.knownRecord) ?? 0);
			if ((r.recordId ?? "") !== S.knownRecord) {
				S.knownRecord = r.recordId ?? "";
				r = await ask(S.delivered.get(S.knownRecord) ?? 0);
			}
			return r;
		});
		if (!st?.due || !st.text) return undefined;
		if (st.step) S.delivered.set(st.recordId ?? "", Math.max(st.step, S.delivered.get(st.recordId ?? "") ?? 0));
		if (st.branchChanged) S.branchChanged = false;
		if (st.externalCompaction) S.externalShownWindow = S.rollover?.window ?? 1;
		const next = content.slice();
		next[last] = { ...next[last], text: `${next[last].text}${statusSep}${st.text}` };
		// Pi 1.6 drops a result's structuredContent when a handler replaces
		// its content without it (read and bash declare one): hand it back.
		const structured = (ev as any).structuredContent;
		return structured === undefined ? { content: next } : ({ content: next, structuredContent: structured } as any);
	});

	// The tool-call guard while a notes checkpoint is required.
	pi.on("tool_call", async (ev, ctx) => {
		if (S.rollover?.stage !== "requested" || stale(ctx)) return undefined;
		const r = await quietly(() => event(ctx, { kind: "tool_call", tool: ev.toolName }));
		if (r?.decision.block) return { block: true, reason: r.decision.blockReason };
		return undefined;
	});

	pi.on("turn_start", async (_ev, ctx) => {
		if (stale(ctx) || !S.proposed) return;
		await quietly(() => reconcile(ctx)); // the boundary's continuation request
	});

	pi.on("turn_end", async (ev: any, ctx) => {
		if (stale(ctx)) return undefined;
		// A host with actionable boundaries hands turn_end the proposal so far.
		if (Array.isArray(ev.entries) && typeof ev.continue === "boolean") caps.boundary = true;
		const aborted = !!ctx.signal?.aborted || ev.message?.stopReason === "aborted" || ev.outcome === "aborted";
		const r = await quietly(() => event(ctx, { kind: "turn_end", aborted }));
		if (!r) return undefined;
		steer(r.decision);
		if (!r.decision.rollOver) return undefined;
		if (!caps.boundary) {
			rollOver(ctx, r.decision.rollOver);
			return undefined;
		}
		return quietly(() => boundaryRollover(ctx, r.decision.rollOver!, ev));
	});

	// Pi 0.73.1: the run is over; model, user and host rollovers start here.
	// (On Pi 1.6 agent_end is not final: agent_before_settle is.)
	pi.on("agent_end", async (ev, ctx) => {
		if (caps.boundary || stale(ctx)) return;
		const msgs = (ev as any).messages as any[];
		let aborted = !!ctx.signal?.aborted;
		for (let i = (msgs?.length ?? 0) - 1; i >= 0; i--) {
			if (msgs[i].role === "assistant") {
				aborted ||= msgs[i].stopReason === "aborted";
				break;
			}
		}
		const r = await quietly(() => event(ctx, { kind: "settle", aborted }));
		S.running = false;
		if (r?.decision.rollOver) rollOver(ctx, r.decision.rollOver);
	});

	// Pi 1.6: the last actionable boundary of a run that was not aborted
	// (an aborted one goes straight to agent_settled). The service re-checks
	// a host schedule here; a rollover still due is returned as entries.
	pi.on("agent_before_settle" as any, async (ev: any, ctx: ExtensionContext) => {
		if (stale(ctx)) return undefined;
		caps.boundary = true;
		return quietly(async () => {
			await reconcile(ctx);
			const r = await event(ctx, { kind: "settle", aborted: !!ctx.signal?.aborted });
			if (!r.decision.rollOver) return undefined;
			return boundaryRollover(ctx, r.decision.rollOver, ev);
		});
	});

	// Pi 1.6: the run is over for good. An aborted run reports its abort here
	// (a model or host schedule is cancelled); a schedule the boundary handed
	// on (declined template, external owner) goes to Pi's compaction, as on
	// 0.73.1, and the handler waits for it.
	pi.on("agent_settled" as any, async (ev: any, ctx: ExtensionContext) => {
		if (stale(ctx)) return;
		await quietly(async () => {
			await reconcile(ctx);
			let handOff = S.handOff;
			S.handOff = undefined;
			if (ev?.aborted) {
				const r = await event(ctx, { kind: "settle", aborted: true });
				handOff = r.decision.rollOver;
			}
			S.running = false;
			if (!handOff) return;
			rollOver(ctx, handOff);
			// Pi 1.6 defers a prompt sent while agent_settled handlers run,
			// and refuses one sent while a compaction runs: holding this
			// handler until the compaction is over turns the second into
			// the first.
			await rolloverDone;
		});
		S.running = false;
	});

	pi.on("session_before_compact", async (ev, ctx) => {
		const d = await quietly(async () => {
			await push(ctx, ev.signal); // a hung service must not hold Pi's compaction up
			return svc.request("POST", `/v1/sessions/${enc(S.sid)}/compaction`, {
				body: {
					leaf: ctx.sessionManager.getLeafId() ?? "",
					firstKeptEntryId: ev.preparation.firstKeptEntryId,
					customInstructions: ev.customInstructions || undefined,
					model: modelId(ctx),
					ours: S.ourCompaction !== undefined,
					// Pi's threshold compaction inside a run (§14) gets Pi's
					// summary, never the template.
					midRun: S.ourCompaction === undefined && S.running && (ev as any).reason !== "manual" ? true : undefined,
					reason: S.ourCompaction,
					pi: { keepRecentTokens: ev.preparation.settings.keepRecentTokens, reserveTokens: ev.preparation.settings.reserveTokens },
				},
				signal: ev.signal,
			});
		});
		if (!d?.compaction) return undefined; // Pi's own summary (or another extension's) runs
		return { compaction: d.compaction };
	});

	pi.on("session_compact", async (ev: any, ctx) => {
		if (stale(ctx)) return;
		S.lastCompaction = lastCompactionOf(ctx);
		// Seed A §5.1: a compaction that carries both this extension's
		// details and a remote compaction's means two extensions acted.
		const d = ev?.compactionEntry?.details;
		if (d && d.remoteCompaction !== undefined && d.windowNumber !== undefined) {
			const msg = "pi-history: this compaction holds both pi-history's rollover summary and another extension's remote compaction (details.remoteCompaction); list the model in externalCompactionModels so only one of them compacts.";
			if (ctx.hasUI) ctx.ui.notify(msg, "warning");
			else console.warn(msg);
		}
		await quietly(() => event(ctx, { kind: "compaction" }));
	});

	pi.on("session_tree", async () => {
		S.branchChanged = true;
	});
}

function enc(s: string) {
	return encodeURIComponent(s);
}

/** The last compaction entry on the active branch. */
function lastCompactionEntry(ctx: ExtensionContext): any {
	const branch = ctx.sessionManager.getBranch() as any[];
	for (let i = branch.length - 1; i >= 0; i--) if (branch[i].type === "compaction") return branch[i];
	return undefined;
}

function lastCompactionOf(ctx: ExtensionContext): string {
	return lastCompactionEntry(ctx)?.id ?? "";
}

/** Whether a rollover summary holds the index of earlier user messages. */
function hasIndex(summary: unknown): boolean {
	return typeof summary === "string" && summary.includes("\n## Earlier user messages");
}

/** A copy of v whose object keys are snake_case (the structuredContent scripts read); undefined fields are left out. */
function snake(v: any): any {
	if (Array.isArray(v)) return v.map(snake);
	if (!v || typeof v !== "object") return v;
	const out: Record<string, unknown> = {};
	for (const [k, x] of Object.entries(v)) {
		if (x === undefined) continue;
		out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = snake(x);
	}
	return out;
}

function lastTextIndex(content: any[] | undefined): number {
	if (!Array.isArray(content)) return -1;
	for (let i = content.length - 1; i >= 0; i--) if (content[i]?.type === "text") return i;
	return -1;
}

/** Appends a trailer to a message's last text block (or as its own block); structured text and non-text blocks are left as they are. */
function withTrailer(m: any, t: string): any {
	if (m.role === "compactionSummary" || m.role === "branchSummary") {
		return { ...m, summary: `${m.summary}\n\n${t}` };
	}
	if (typeof m.content === "string") return { ...m, content: `${m.content}\n\n${t}` };
	if (!Array.isArray(m.content)) return m;
	const content = m.content.slice();
	const i = lastTextIndex(content);
	if (i >= 0 && !looksStructured(content[i].text)) {
		content[i] = { ...content[i], text: `${content[i].text}\n\n${t}` };
	} else {
		content.push({ type: "text", text: t });
	}
	return { ...m, content };
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
