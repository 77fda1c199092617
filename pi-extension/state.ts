// The extension's state: what the host offers (Caps), the volatile state of
// the current session (SessionState, rebuilt on every session_start and
// whenever the session id changes), and the Runtime every module shares (the
// service client, the current SessionState, the rollover in flight and the
// hook work under way).

import type { ImageContent } from "@mariozechner/pi-ai";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import type { Decision, RolloverState, SearchRequest } from "./api-types.ts";
import type { QueryOf } from "./client.ts";
import { ApiClient } from "./client.ts";
import type { Clock } from "./clock.ts";
import { installedClock } from "./clock.ts";
import type { IdleTimer } from "./idle.ts";
import type { ContextManagement } from "./settings.ts";
import { defaultContextManagement } from "./settings.ts";
import { optionsFromEnv, Service } from "./service.ts";

/** Why a rollover runs: the reasons the service names in its decisions. */
export type Reason = NonNullable<Decision["rollOver"]>;

/**
 * What the host Pi offers, learned at run time. Each flag starts false and is
 * set only when the host shows the capability (fail closed): a host that
 * shows nothing gets the Pi 0.73.1 behaviour.
 */
export interface Caps {
	/** turn_end carries the boundary proposal (entries, continue): compactions are returned as entries (Pi ≥ 1.6). */
	boundary: boolean;
	/** before_agent_start offers systemPromptOptions.sections: guidance is a prompt section, not a replaced prompt. */
	sections: boolean;
	/** pi.getSettings exists (Pi ≥ 1.6): Pi's merged settings, and tools may return isError and structuredContent. */
	settings: boolean;
}

/** The query of the branch listing (history {list}). */
export type ListQuery = QueryOf<"GET /v1/sessions/{id}/entries">;

/** The request behind a cursor the history tool handed out. */
export type CursorRequest = { kind: "search"; req: SearchRequest } | { kind: "list"; req: ListQuery };

/** Per-session volatile state; rebuilt on every session_start. */
export class SessionState {
	sid = "";
	headerPushed = false;
	pushed = new Set<string>();
	registeredFile = "";
	rollover?: RolloverState;
	delivered = new Map<string, number>(); // notebook record id ("" = none) → highest status step shown
	knownRecord = "";
	branchChanged = false;
	externalShownWindow = 0;
	ourCompaction?: Reason; // the reason of the compaction this extension started
	externalModels: string[] = [];
	// The request behind each cursor the history tool handed out: the next
	// page is asked with it (the leaf moves with every message, and a
	// cursor is bound to the request it came from), so a cursor alone is a
	// whole call. The last maxCursors are kept.
	cursors = new Map<string, CursorRequest>();
	configLoaded = false;
	// A run is under way (agent_start until the settle hook has decided).
	running = false;
	// The compaction this extension returned as a boundary entry, until it
	// is seen on the branch (or not): the service is told at the next hook.
	proposed?: { summary: string; reason: Reason };
	// The last compaction on the branch the service was told about.
	lastCompaction = "";
	// A schedule the boundary could not carry out (the template was
	// declined): agent_settled hands it to ctx.compact(), as on 0.73.1.
	handOff?: Reason;
	// A /rollover (or idle) preparation under way: its user rollover is
	// carried out without a continuation; checkpointed once that rollover
	// was made.
	preparing?: { checkpointed: boolean; kind: "manual" | "idle" };
	// Input the user typed while a preparation ran: sent once it is over,
	// so it runs in the new window.
	queued: Array<{ text: string; images?: ImageContent[] }> = [];
	// contextManagement from Pi's settings files, read at session_start.
	cm: ContextManagement = defaultContextManagement();
	// An idle rollover was started since the user's last input: the next
	// one waits for the user's next run.
	idleTried = false;
	// redirectCompact in the configuration: the user's /compact starts
	// the /rollover preparation (seed B).
	redirectCompact = false;
}

/** How many history cursors a session remembers. */
export const maxCursors = 50;

/**
 * What every module of the extension shares. S is replaced when the session
 * changes: read it anew after every await, never keep it in a local.
 */
export class Runtime {
	readonly pi: ExtensionAPI;
	readonly service: Service;
	readonly api: ApiClient;
	S = new SessionState();
	readonly caps: Caps;
	// Settles when the rollover this extension started through ctx.compact()
	// is over (continuation sent or dropped); a prompt typed meanwhile waits
	// for it in the input hook.
	rolloverDone?: Promise<void>;
	promptsWaiting = 0;
	// The idle rollover's clock (a test may install a fake one) and timer.
	readonly clock: Clock = installedClock();
	idleTimer?: IdleTimer;
	// Non-empty (the configuration file's path) while the configuration says
	// enabled: false; toolsRemoved are the tools that took out of the active set.
	disabled = "";
	toolsRemoved: string[] = [];
	// Hook work in flight, so tests (and shutdown) can wait for it.
	private inflight = 0;
	private waiters: Array<() => void> = [];

	constructor(pi: ExtensionAPI, service = new Service(optionsFromEnv())) {
		this.pi = pi;
		this.service = service;
		this.api = new ApiClient(service);
		this.caps = { boundary: false, sections: false, settings: typeof pi.getSettings === "function" };
	}

	/** Runs fn as hook or tool work in flight (see idle). */
	async track<T>(fn: () => Promise<T>): Promise<T> {
		this.inflight++;
		try {
			return await fn();
		} finally {
			this.inflight--;
			if (this.inflight === 0) {
				const w = this.waiters;
				this.waiters = [];
				for (const f of w) f();
			}
		}
	}

	/** Runs hook work against the service; does nothing when it is unreachable or fails. */
	async quietly<T>(fn: () => Promise<T>): Promise<T | undefined> {
		return this.track(async () => {
			try {
				return await fn();
			} catch {
				return undefined;
			}
		});
	}

	/** Settles when no hook or tool work is in flight. */
	idle(): Promise<void> {
		return this.inflight === 0 ? Promise.resolve() : new Promise<void>((r) => this.waiters.push(r));
	}

	/** True while work is in flight or a compaction this extension started runs. */
	busy(): boolean {
		return this.inflight > 0 || this.S.ourCompaction !== undefined;
	}

	/** Remembers the request behind a cursor the history tool hands out (the last maxCursors). */
	remember(cursor: string, c: CursorRequest): void {
		const cursors = this.S.cursors;
		cursors.set(cursor, c);
		while (cursors.size > maxCursors) cursors.delete(cursors.keys().next().value as string);
	}
}
