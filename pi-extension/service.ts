// Finding, starting and talking to the local pi-history service.
//
// The service records its address in <data>/server.json and its bearer token
// in <data>/api-token. On first use the extension reads both and checks
// /healthz; when nothing answers and autostart is on, it starts
// `pi-history serve --data <data>` in the background (if the binary can be
// found), waits for /healthz, and reads the token again. When the service
// stays unreachable every call fails with ServiceDown, whose message says how
// to start it; the extension then leaves Pi alone.

import { spawn } from "node:child_process";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, fchmodSync, mkdirSync, openSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import type { Health, Problem } from "./api-types.ts";

export interface ServiceOptions {
	dataDir: string;
	bin: string; // a path, or a name looked up on PATH
	autostart: boolean;
	serveArgs: string[]; // extra arguments for `pi-history serve`
	startTimeoutMs: number;
	requestTimeoutMs: number;
	retryAfterMs: number; // after a failed connection, how long before trying again
	url?: string; // explicit base URL (skips server.json)
	token?: string; // explicit token (skips api-token)
}

/** Options from the environment (PI_HISTORY_*), with defaults. */
export function optionsFromEnv(env: NodeJS.ProcessEnv = process.env): ServiceOptions {
	const xdg = env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : join(homedir(), ".local", "share");
	const off = (v: string | undefined) => v !== undefined && /^(0|false|no|off)$/i.test(v.trim());
	return {
		dataDir: env.PI_HISTORY_DATA || join(xdg, "pi-history"),
		bin: env.PI_HISTORY_BIN || "pi-history",
		autostart: !off(env.PI_HISTORY_AUTOSTART),
		serveArgs: (env.PI_HISTORY_SERVE_ARGS || "").split(/\s+/).filter(Boolean),
		startTimeoutMs: Number(env.PI_HISTORY_START_TIMEOUT_MS) || 15000,
		requestTimeoutMs: Number(env.PI_HISTORY_REQUEST_TIMEOUT_MS) || 30000,
		retryAfterMs: Number(env.PI_HISTORY_RETRY_MS) || 15000,
		url: env.PI_HISTORY_URL || undefined,
		token: env.PI_HISTORY_TOKEN || undefined,
	};
}

/** The service cannot be reached. The message says how to start it. */
export class ServiceDown extends Error {
	constructor(message: string) {
		super(message);
		this.name = "ServiceDown";
	}
}

/** An error body as it arrived: a problem document, or {status, detail} from a body that was not JSON. */
export type ProblemBody = Partial<Problem>;

/** The service answered with an error status (an RFC 9457 problem). */
export class ApiError extends Error {
	status: number;
	problem: ProblemBody;
	constructor(status: number, problem: ProblemBody) {
		const detail = problem?.detail || problem?.title || `HTTP ${status}`;
		super(problem?.hint ? `${detail} (${problem.hint})` : detail);
		this.name = "ApiError";
		this.status = status;
		this.problem = problem;
	}
}

function findBinary(bin: string): string | undefined {
	if (bin.includes("/")) return existsSync(bin) ? bin : undefined;
	for (const dir of (process.env.PATH || "").split(delimiter)) {
		if (!dir) continue;
		const p = join(dir, bin);
		try {
			if (statSync(p).isFile()) return p;
		} catch {
			// not here
		}
	}
	return undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// How long a proof that the service holds the token is trusted (see healthy):
// long enough for a burst of requests, not for the pause between two turns.
const PROOF_TTL_MS = 250;

// notOurs says why a file or directory of the data directory must not be
// trusted (another user's, or writable by others: the server it names could
// be theirs, and would be sent the token and every entry); why is "" when
// it may be. foreign is set when it belongs to another user: starting a
// service there is no use (it refuses such a directory), where one writable
// by others is made private by the service that starts.
function notOurs(p: string): { why: string; foreign?: boolean } {
	try {
		const st = statSync(p);
		const uid = process.getuid?.();
		if (uid !== undefined && st.uid !== uid)
			return { why: `${p} belongs to user ${st.uid}, not to you (${uid}); use a data directory of your own (PI_HISTORY_DATA)`, foreign: true };
		if (st.mode & 0o022) return { why: `${p} can be written by other users (mode ${(st.mode & 0o777).toString(8)}); make it private (chmod go-w ${p})` };
	} catch {
		// missing: the reader reports it
	}
	return { why: "" };
}

export class Service {
	readonly opts: ServiceOptions;
	private base?: string;
	private token?: string;
	private connecting?: Promise<boolean>;
	private downUntil = 0;
	private started = false;
	private lastProblem = "";
	private refused = ""; // why the program at the recorded address was not trusted
	private untrusted = ""; // why the data directory's files were not trusted, as readServer last found
	private foreign = false; // they belong to another user
	private provenAt = 0; // when the service last proved that it holds the token (healthy)

	constructor(opts: ServiceOptions) {
		this.opts = opts;
	}

	/** Why the service is unavailable, and how to start it. */
	downMessage(): string {
		const o = this.opts;
		const how = `start it with \`${o.bin} serve --data ${o.dataDir}\``;
		let why: string;
		if (this.untrusted) why = ` (${this.untrusted})`;
		else if (this.refused) why = ` (${this.refused})`;
		else if (o.url) why = ` (PI_HISTORY_URL is ${o.url}, so it is not started automatically)`;
		else if (!o.autostart) why = " (automatic start is off: PI_HISTORY_AUTOSTART=0)";
		else if (this.lastProblem) why = ` (automatic start did not work: ${this.lastProblem}; set PI_HISTORY_BIN to the binary's path if it is not on PATH)`;
		else if (this.started) why = ` (this Pi started it earlier and it has stopped since; see ${join(o.dataDir, "serve.log")})`;
		else why = "";
		return `pi-history service is not reachable for data directory ${o.dataDir}: ${how}${why}, then try again.`;
	}

	/** True when the last attempt to reach the service failed and it is not time to try again. */
	knownDown(): boolean {
		return !this.base && Date.now() < this.downUntil;
	}

	/** True when the service answers; connects (and starts it) on first use. */
	async available(): Promise<boolean> {
		if (this.base && this.token) return true;
		if (Date.now() < this.downUntil) return false;
		if (!this.connecting) {
			this.connecting = this.connect().finally(() => {
				this.connecting = undefined;
			});
		}
		return this.connecting;
	}

	/** Forget the connection (after a failed request) so the next use reconnects. */
	private drop() {
		this.base = undefined;
		this.token = undefined;
		this.provenAt = 0;
	}

	private readServer(): { url: string; token: string } | undefined {
		const o = this.opts;
		this.untrusted = "";
		this.foreign = false;
		if (!o.url) {
			for (const p of [o.dataDir, join(o.dataDir, "server.json"), join(o.dataDir, "api-token")]) {
				const n = notOurs(p);
				if (n.why) {
					this.untrusted = `the server it records is not trusted: ${n.why}`;
					this.foreign = !!n.foreign;
					return undefined;
				}
			}
		}
		try {
			let url = o.url;
			if (!url) {
				const info = JSON.parse(readFileSync(join(o.dataDir, "server.json"), "utf8"));
				url = info.url;
			}
			const token = o.token || readFileSync(join(o.dataDir, "api-token"), "utf8").trim();
			if (!url || !token) return undefined;
			return { url: url.replace(/\/+$/, ""), token };
		} catch {
			return undefined;
		}
	}

	// healthy reports whether the service at url answers and holds token,
	// without sending it: server.json outlives a service killed without
	// warning, and another local user's program may then answer on its port.
	// It must answer the challenge with HMAC-SHA256(token, "pi-history
	// healthz " + host + " " + challenge), which only a holder of the token
	// can compute; host is the address the request named, so a program on
	// another port that relays the challenge to the real service (or
	// redirects there, which fetch is told not to follow) gets a proof for
	// the service's address, not its own.
	private async healthy(url: string, token: string): Promise<boolean> {
		try {
			const challenge = randomBytes(16).toString("hex");
			const host = new URL(url).host;
			const r = await fetch(`${url}/healthz?challenge=${challenge}`, { redirect: "error", signal: AbortSignal.timeout(2000) });
			const h: Partial<Health> | undefined = r.ok ? await r.json() : (await r.arrayBuffer(), undefined);
			if (!h) return false;
			this.refused = "";
			const want = createHmac("sha256", token).update(`pi-history healthz ${host} ${challenge}`).digest("hex");
			const got = typeof h.proof === "string" ? Buffer.from(h.proof) : Buffer.alloc(0);
			if (got.length !== want.length || !timingSafeEqual(got, Buffer.from(want))) {
				this.provenAt = 0;
				this.refused = `the program answering at ${url} did not prove that it holds the API token in ${this.opts.dataDir}, so the token was not sent to it (a service that stopped without cleaning up leaves server.json behind, and another program may now use its port)`;
				return false;
			}
			this.provenAt = Date.now();
			return true;
		} catch {
			this.provenAt = 0;
			return false;
		}
	}

	// adopt reads the server the data directory records and, when it proves
	// that it holds the token, makes it the one requests go to.
	private async adopt(): Promise<boolean> {
		const s = this.readServer();
		if (!s || !(await this.healthy(s.url, s.token))) return false;
		this.base = s.url;
		this.token = s.token;
		return true;
	}

	private async connect(): Promise<boolean> {
		if (await this.adopt()) return true;
		if (this.opts.autostart && !this.started && !this.opts.url && !this.foreign) {
			this.started = true; // once per process
			if (this.start()) {
				const deadline = Date.now() + this.opts.startTimeoutMs;
				while (Date.now() < deadline) {
					await sleep(100);
					if (await this.adopt()) return true;
				}
				this.lastProblem = `no answer within ${this.opts.startTimeoutMs} ms; see ${join(this.opts.dataDir, "serve.log")}`;
			}
		}
		this.downUntil = Date.now() + this.opts.retryAfterMs;
		return false;
	}

	private start(): boolean {
		const bin = findBinary(this.opts.bin);
		if (!bin) {
			this.lastProblem = `${this.opts.bin} not found`;
			return false;
		}
		try {
			mkdirSync(this.opts.dataDir, { recursive: true, mode: 0o700 });
			// serve prints a login link: the log is the user's alone.
			const log = openSync(join(this.opts.dataDir, "serve.log"), "a", 0o600);
			fchmodSync(log, 0o600);
			const child = spawn(bin, ["serve", "--data", this.opts.dataDir, ...this.opts.serveArgs], {
				detached: true,
				stdio: ["ignore", log, log],
			});
			child.on("error", (e) => {
				this.lastProblem = String(e);
			});
			child.unref();
			return true;
		} catch (e) {
			this.lastProblem = String(e);
			return false;
		}
	}

	/**
	 * Sends a request to the service. Throws ServiceDown when it cannot be
	 * reached and ApiError for an error status.
	 */
	async request<T = unknown>(method: string, path: string, opts: { body?: unknown; query?: Record<string, unknown>; signal?: AbortSignal } = {}, retried = false): Promise<T> {
		if (!(await this.available())) throw new ServiceDown(this.downMessage());
		// Another request may drop the connection while this one waits:
		// hold on to the address and token it is proving and using.
		const base = this.base;
		const token = this.token;
		if (!base || !token) throw new ServiceDown(this.downMessage());
		// The proof is trusted for PROOF_TTL_MS: the service may die and
		// another program take its port between two turns, and the token and
		// the entries pushed would go to it. Proving again, the extension
		// reads server.json again: a service started anew since (on another
		// port) is found there.
		if (Date.now() - this.provenAt > PROOF_TTL_MS) {
			if (!(await this.adopt()) && !(await this.healthy(base, token))) {
				if (this.base === base) this.drop();
				throw new ServiceDown(this.downMessage());
			}
			if (this.base !== base || this.token !== token) return this.request<T>(method, path, opts, retried);
		}
		let url = base + path;
		if (opts.query) {
			const q = new URLSearchParams();
			for (const [k, v] of Object.entries(opts.query)) {
				if (v === undefined || v === null || v === "" || v === false) continue;
				q.set(k, Array.isArray(v) ? v.join(",") : String(v));
			}
			const qs = q.toString();
			if (qs) url += `?${qs}`;
		}
		const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: "application/json" };
		if (opts.body !== undefined) headers["Content-Type"] = "application/json";
		const timeout = AbortSignal.timeout(this.opts.requestTimeoutMs);
		const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
		let r: Response;
		try {
			r = await fetch(url, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), redirect: "error", signal });
		} catch (e) {
			if (opts.signal?.aborted) throw e;
			if (timeout.aborted) {
				// It answers, slowly (a large sync or import): not down.
				throw new ServiceDown(`pi-history did not answer ${method} ${path} within ${this.opts.requestTimeoutMs} ms; it may be busy (a large import or sync): try again shortly.`);
			}
			this.drop();
			this.downUntil = 0; // reconnect on next use (the server may have moved)
			// Refused: the request never reached a server, so it is safe to
			// send again once, to a server that restarted (on another port,
			// as its server.json says) since the last request.
			const cause = e instanceof Error && typeof e.cause === "object" && e.cause !== null && "code" in e.cause ? e.cause.code : undefined;
			if (!retried && cause === "ECONNREFUSED") return this.request<T>(method, path, opts, true);
			throw new ServiceDown(this.downMessage());
		}
		const text = await r.text();
		if (!r.ok) {
			let problem: ProblemBody;
			try {
				problem = JSON.parse(text);
			} catch {
				problem = { status: r.status, detail: text.trim() };
			}
			if (r.status === 401) this.drop(); // token changed: read it again next time
			throw new ApiError(r.status, problem);
		}
		return (text ? JSON.parse(text) : undefined) as T;
	}
}
