// Shared helpers for the end-to-end scripts: a real AgentSession on Pi's
// offline faux model with the extension loaded, talking to the pi-history
// service whose data directory is PI_HISTORY_DATA (started by the Go test).

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

// PI_TEST_PI=1.6 runs them on Pi 1.6.0 (test/pi16, under Node 22); the
// default is Pi 0.73.1 (the extension's own devDependencies, Node 20).
export const piVersion = process.env.PI_TEST_PI === "1.6" ? "1.6" : "0.73";
const pi = piVersion === "1.6" ? await import("./pi16/pi.mjs") : await import("./pi073.mjs");
export const { fauxAssistantMessage, fauxText, fauxToolCall } = pi;

export const extensionPath = join(dirname(fileURLToPath(import.meta.url)), "..", "index.ts");
export const ext = () => globalThis[Symbol.for("pi-history.extension")];
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function fail(msg) {
	// Printed as well as thrown: a check inside a model callback throws into
	// Pi, which ends the run without showing it.
	console.error(`check failed: ${msg}`);
	throw new Error(msg);
}

export function check(cond, msg) {
	if (!cond) fail(msg);
}

/** A working directory with files of about `tokens` tokens each. */
export function makeFiles(dir, files) {
	mkdirSync(dir, { recursive: true });
	for (const [name, { tokens, marker }] of Object.entries(files)) {
		const lines = [];
		let chars = 0;
		let i = 0;
		while (chars < tokens * 4) {
			const l = `${name} line ${i++}: ${"filler text ".repeat(6)}`;
			lines.push(l);
			chars += l.length + 1;
		}
		if (marker) lines.splice(Math.floor(lines.length / 2), 0, marker);
		writeFileSync(join(dir, name), lines.join("\n"));
	}
}

/**
 * Starts an AgentSession in a fresh temporary layout under root. `model`
 * decides each reply from the request context (a function), after the
 * extension's hook work has settled.
 */
export async function startSession(
	root,
	{ contextWindow = 60000, compaction = {}, model, tools = ["read", "notes", "new_context", "history"], before = [], after = [], settings = {}, projectSettings, projectTrusted, promptCache, mode },
) {
	const cwd = join(root, "work");
	const agentDir = join(root, "agent");
	const sessionsDir = process.env.PI_SESSIONS_DIR || join(root, "sessions");
	mkdirSync(cwd, { recursive: true });
	mkdirSync(agentDir, { recursive: true });
	mkdirSync(sessionsDir, { recursive: true });
	// settings: more global settings (contextManagement, say);
	// projectSettings: the project's .pi/settings.json.
	const global = { compaction: { enabled: true, reserveTokens: 4000, keepRecentTokens: 8000, ...compaction }, ...settings };
	// The extension reads Pi's settings from the agent directory.
	writeFileSync(join(agentDir, "settings.json"), JSON.stringify(global));
	if (projectSettings) {
		mkdirSync(join(cwd, ".pi"), { recursive: true });
		writeFileSync(join(cwd, ".pi", "settings.json"), JSON.stringify(projectSettings));
	}
	process.env.PI_CODING_AGENT_DIR = agentDir;

	const models = [{ id: "faux-1", contextWindow, maxTokens: 4096 }];
	const requests = [];
	let session;
	const step = async (context) => {
		await quiesce(session);
		// Pi 1.6 sends the system prompt (and its patches) as system
		// messages; the scripts read the conversation, as on 0.73.1.
		const view = { ...context, messages: context.messages.filter((m) => m.role !== "system"), system: context.messages.filter((m) => m.role === "system") };
		requests.push(view);
		return model(view, requests.length);
	};
	// projectTrusted: false makes Pi 1.6 treat the project as untrusted (its settings unread).
	const settingsManager = pi.SettingsManager.create(cwd, agentDir, projectTrusted === undefined ? undefined : { projectTrusted });
	const resourceLoader = new pi.DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		// before/after: test-only extensions loaded around this one.
		additionalExtensionPaths: [...before, extensionPath, ...after],
		noSkills: true,
		noPromptTemplates: true,
		noThemes: true,
		noContextFiles: true,
	});
	await resourceLoader.reload();
	const sessionManager = pi.SessionManager.create(cwd, sessionsDir);
	const errors = [];
	let faux, runtime;
	if (piVersion === "1.6") {
		// Pi 1.6: a ModelRuntime with the faux provider registered natively.
		faux = pi.fauxProvider({ models });
		runtime = { modelRuntime: await pi.ModelRuntime.create({ authPath: join(agentDir, "auth.json"), modelsPath: null }) };
		runtime.modelRuntime.registerNativeProvider(faux.provider);
		await runtime.modelRuntime.setRuntimeApiKey(faux.provider.id, "offline");
		faux.unregister = () => {};
	} else {
		faux = pi.registerFauxProvider({ models });
		const authStorage = pi.AuthStorage.inMemory();
		authStorage.setRuntimeApiKey("faux", "offline");
		runtime = { authStorage, modelRegistry: pi.ModelRegistry.inMemory(authStorage) };
	}
	faux.setResponses(Array.from({ length: 200 }, () => step));
	const piModel = faux.getModel();
	// The faux provider keeps no promptCache of its own: set it on the model.
	if (promptCache) piModel.promptCache = promptCache;
	const created = await pi.createAgentSession({
		cwd,
		agentDir,
		model: piModel,
		...runtime,
		settingsManager,
		resourceLoader,
		sessionManager,
		tools,
	});
	session = created.session;
	// promptCache: the model's prompt-cache lifetimes in seconds ({short, long}).
	// mode: the frontend the extension is told it runs in (Pi 1.6's ctx.mode; "print" unless set).
	await session.bindExtensions({ onError: (e) => errors.push(e), ...(mode ? { mode } : {}) });
	return {
		session,
		faux,
		cwd,
		requests,
		errors,
		async prompt(text) {
			await session.prompt(text);
			await settle(session);
		},
		entries: () => session.sessionManager.getEntries(),
		branch: () => session.sessionManager.getBranch(),
		file: () => session.sessionManager.getSessionFile(),
		journal: () => readFileSync(session.sessionManager.getSessionFile(), "utf8").trim().split("\n").map((l) => JSON.parse(l)),
		dispose() {
			session.dispose();
			faux.unregister();
		},
	};
}

/** Waits until Pi's event queue and the extension's hook work are done. */
export async function quiesce(session) {
	for (let i = 0; i < 3; i++) {
		if (session) await session._agentEventQueue;
		await ext()?.idle();
	}
}

/** Waits until the session is idle for good: no run, no compaction, no hook work, no follow-up run. */
export async function settle(session, timeoutMs = 60000) {
	const deadline = Date.now() + timeoutMs;
	let quiet = 0;
	while (Date.now() < deadline) {
		await quiesce(session);
		const busy = session.isStreaming || session.isCompacting || ext()?.busy();
		quiet = busy ? 0 : quiet + 1;
		if (quiet >= 3) return;
		await sleep(30);
	}
	fail("session did not settle");
}

/** Runs fn with standard output captured (what the extension shows where Pi has no UI) and returns it. */
export async function captured(fn) {
	let printed = "";
	const write = process.stdout.write.bind(process.stdout);
	process.stdout.write = (chunk) => ((printed += String(chunk)), true);
	try {
		await fn();
	} finally {
		process.stdout.write = write;
	}
	return printed;
}

// ---- reading requests and journals ----

/** The text of a context message as the model sees it. */
export function msgText(m) {
	if (typeof m.content === "string") return m.content;
	if (Array.isArray(m.content)) return m.content.map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? JSON.stringify(b) : "")).join("\n");
	return m.summary ?? "";
}

export function lastToolResult(ctx) {
	for (let i = ctx.messages.length - 1; i >= 0; i--) if (ctx.messages[i].role === "toolResult") return ctx.messages[i];
	return undefined;
}

export function lastMessage(ctx) {
	return ctx.messages[ctx.messages.length - 1];
}

/** Tool results of the journal, by tool name. */
export function toolResults(entries, name) {
	return entries.filter((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === name).map((e) => e.message);
}

/**
 * A model that answers with the steps of plan in order, each called with
 * the context; done() checks that every step was used.
 */
export function scripted(plan) {
	let i = 0;
	return {
		model: (ctx) => {
			const f = plan[i++];
			if (!f) throw new Error(`model called more often than scripted (${i})`);
			return f(ctx);
		},
		done: () => check(i === plan.length, `model called ${i} times, scripted ${plan.length}`),
	};
}

export const say = (text) => fauxAssistantMessage(text);
export const call = (name, args, id) => fauxAssistantMessage([fauxText(`calling ${name}`), fauxToolCall(name, args, { id })], { stopReason: "toolUse" });

/** Reads the ledger through the service. */
export async function ledger(kind, session) {
	const svc = ext().service;
	const r = await svc.request("GET", "/v1/ledger", { query: { kind, session } });
	return r.rows;
}
