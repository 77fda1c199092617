// The idle rollover (seed B), Pi 1.6, on a fake clock. The model's prompt
// cache lives 300 s (its short tier), so Pi's refresh point is 270 s after
// the last request and the idle rollover is due two seconds later. It does
// not fire before; Pi's cache warming ("warm" decisions) moves it on by one
// refresh period each time; when it fires, a visible preparation message
// starts a pausing rollover. A preparation the agent declines is reported
// once and not retried until the user runs again; input typed during a
// preparation waits and runs in the new window. Below
// idleRollover.minTokens, in print mode, with idleRollover.enabled false or
// after sleeping past Pi's late-refresh cutoff (PI_TEST_IDLE=below, =print,
// =disabled, =slept) nothing fires at all.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, captured, check, makeFiles, msgText, piVersion, say, scripted, settle, startSession } from "./harness.mjs";

if (piVersion !== "1.6") {
	console.log("idle: ok"); // Pi 0.73.1 has no run-settled event, no ctx.mode and no cache warming
	process.exit(0);
}
const variant = process.env.PI_TEST_IDLE ?? "";

// The fake clock the extension reads when it loads (clock.ts).
const clock = {
	t: 1_000_000,
	timers: [],
	now() {
		return this.t;
	},
	setTimeout(fn, ms) {
		const h = { at: this.t + ms, fn };
		this.timers.push(h);
		return h;
	},
	clearTimeout(h) {
		this.timers = this.timers.filter((x) => x !== h);
	},
};
globalThis[Symbol.for("pi-history.clock")] = clock;
/** Moves the fake clock to `at`, running the timers due on the way. */
async function advanceTo(at) {
	for (;;) {
		const due = clock.timers.filter((h) => h.at <= at).sort((a, b) => a.at - b.at)[0];
		if (!due) break;
		clock.timers = clock.timers.filter((x) => x !== due);
		clock.t = Math.max(clock.t, due.at);
		due.fn();
		await settle(s.session);
	}
	clock.t = at;
	await settle(s.session);
}

const root = mkdtempSync(join(tmpdir(), "pih-idle-"));
const HANDOFF = "Done: read big1.\nNext: answer the user's next question.";
const isIdlePrep = (ctx) => ctx.messages.some((m) => msgText(m).includes("This context window has been idle"));
let typed;
let newWindow;
const plan = [
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("notes", { sections: { Task: "Read big1.", Next: "wait for the user" } }, "n1"),
	() => say("Read big1."),
	// the first idle preparation: the agent declines
	(ctx) => {
		check(isIdlePrep(ctx), "no idle preparation message");
		return say("Nothing to prepare now.");
	},
	// the user's next run
	() => say("Going on."),
	// the second idle preparation: the user types meanwhile; the agent rolls over
	(ctx) => {
		typed = s.session.prompt("What was in big1?", { streamingBehavior: "steer" });
		return call("notes", { reviewed: true }, "n2");
	},
	() => call("new_context", { userRequested: true, handoff: HANDOFF }, "c1"),
	() => say("Handoff written; stopping."),
	// the typed message, in the new window (checked below)
	(ctx) => {
		newWindow = ctx;
		return say("big1 holds filler lines.");
	},
];
const script = scripted(plan);
const minTokens = variant === "below" ? 10_000_000 : 1000;
const idleRollover = variant === "disabled" ? { enabled: false, minTokens } : { minTokens };
let s;
await captured(async () => {
	s = await startSession(root, {
		contextWindow: 200000,
		model: script.model,
		settings: { contextManagement: { idleRollover } },
		promptCache: { short: 300, long: 3600 },
		mode: variant === "print" ? undefined : "rpc",
	});
});
makeFiles(s.cwd, { "big1.txt": { tokens: 5000 } });
const warm = () => s.session.extensionRunner.emitCacheWarmingDecision({ type: "cache_warming_decision", warmCost: 0, missCost: 0, continuationProbability: 0.15, action: "warm" });

await s.prompt("Read big1.txt and take notes.");
let base = clock.t; // the run settled now: the timer counts from here
let n = s.requests.length;
let out = await captured(() => advanceTo(base + 271_999));
check(s.requests.length === n, `the idle rollover fired ${271_999 - 0} ms after the run, before Pi's refresh point plus two seconds`);
if (variant === "slept") {
	// The machine slept past Pi's late-refresh cutoff (halfway from the
	// refresh point to expiry, 285 s): the cache is lost, nothing runs.
	clock.t = base + 290_000;
}
if (variant) {
	out += await captured(() => advanceTo(base + 3_600_000));
	check(s.requests.length === n && !out.includes("Idle rollover"), `idle rollover with ${variant}: ${out}`);
	s.dispose();
	console.log("idle: ok");
	process.exit(0);
}
// Pi warms the cache at its refresh point: the idle rollover waits one more period.
await advanceTo(base + 270_000);
await warm();
out = await captured(() => advanceTo(base + 270_000 + 271_999));
check(s.requests.length === n, "the idle rollover fired while Pi kept the cache warm");
out = await captured(() => advanceTo(base + 270_000 + 272_000));
check(s.requests.length === n + 1, `the idle rollover did not fire at the refresh point after Pi's last warm (${s.requests.length - n} requests)`);
check(out.includes("Idle rollover not completed"), `the declined preparation was not reported: ${out}`);
check(!s.entries().some((e) => e.type === "compaction"), "a compaction without a rollover");
// Not retried until the user runs again.
n = s.requests.length;
out = await captured(() => advanceTo(clock.t + 3_600_000));
check(s.requests.length === n, `the idle rollover was retried without a user run (${s.requests.length - n} requests)`);

await s.prompt("Go on.");
base = clock.t;
n = s.requests.length;
out = await captured(() => advanceTo(base + 272_000));
await typed;
await settle(s.session);
script.done();
check(out.includes("Idle rollover done"), `the checkpoint was not reported: ${out}`);
check(out.includes("Your message waits until the rollover preparation is over"), `typed input was not held: ${out}`);
const comps = s.journal().filter((e) => e.type === "compaction");
check(comps.length === 1 && comps[0].details.reason === "user" && comps[0].summary.includes(HANDOFF), `compactions: ${JSON.stringify(comps.map((c) => c.details))}`);
check(newWindow, "the typed message never ran");
check(msgText(newWindow.messages[0]).includes(HANDOFF), `the typed message did not run in the new window: ${msgText(newWindow.messages[0]).slice(0, 200)}`);
check(msgText(newWindow.messages[newWindow.messages.length - 1]).includes("What was in big1?"), "the typed message is not the last one");
check(!newWindow.messages.some((m) => msgText(m).includes("[note-context] Context window #")), "a continuation was sent after an idle rollover");
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("idle: ok");
