// The Emergency Rollover (seed B), Pi 1.6: the provider refuses a request
// as too long (PI_TEST_OVERFLOW=error) or cuts a response short
// (PI_TEST_OVERFLOW=length, Pi's recoverable truncated response). Pi
// compacts with reason "overflow"; the extension answers at once with the
// template, the last saved Handoff (written for an earlier window) marked
// stale, at Pi's own keepRecentTokens cut although tailTokens is 0, and
// makes no request of its own (no Handoff preparation, no summariser): the
// next request is Pi's single retry, on the new window. Pi 0.73.1 does not
// say why it compacts: nothing to check there.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { call, captured, check, fauxAssistantMessage, lastToolResult, makeFiles, msgText, piVersion, say, scripted, startSession } from "./harness.mjs";

if (piVersion !== "1.6") {
	console.log("emergency: ok");
	process.exit(0);
}
const kind = process.env.PI_TEST_OVERFLOW === "length" ? "length" : "error";
const root = mkdtempSync(join(tmpdir(), "pih-em-"));
const OLD = "Done: read big1.\nNext: read big2 and big3.";
let overflowAt = 0;
let retry;
const plan = [
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("notes", { sections: { Task: "Read the files.", Next: "read big2 and big3" } }, "n1"),
	() => call("new_context", { handoff: OLD }, "c1"),
	(ctx) => {
		check(!lastToolResult(ctx).isError, `new_context refused: ${msgText(lastToolResult(ctx))}`);
		return say("Rolling over.");
	},
	// window 2, after the continuation
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("read", { path: "big3.txt" }, "r3"),
	() => {
		overflowAt = s.requests.length;
		return kind === "length"
			? fauxAssistantMessage("The summary of big3 is", { stopReason: "length" })
			: fauxAssistantMessage([], { stopReason: "error", errorMessage: "prompt is too long: 250000 tokens > 200000 maximum" });
	},
	// Pi's one retry, on the emergency window (checked below: a check that
	// throws in here only ends Pi's run)
	(ctx) => {
		retry = { n: s.requests.length, ctx };
		return say("Recovered: big3 read.");
	},
];
const script = scripted(plan);
const here = dirname(fileURLToPath(import.meta.url));
let s;
await captured(async () => {
	s = await startSession(root, {
		contextWindow: 200000,
		model: script.model,
		settings: { contextManagement: { tailTokens: 0 } },
		after: [join(here, "compaction-observer.ts")],
	});
});
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 }, "big3.txt": { tokens: 12000 } });
const out = await captured(() => s.prompt("Read big1, big2 and big3, rolling over after big1."));
script.done();
check(retry && retry.n === overflowAt + 1, `requests between the overflow and the retry: ${retry ? retry.n - overflowAt - 1 : "no retry"}`);
const first = msgText(retry.ctx.messages[0]);
check(first.includes("rollover reason: emergency") && first.includes("Emergency rollover:"), `retry context: ${first.slice(0, 300)}`);
check(first.includes("## Handoff (STALE: saved before the context overflowed") && first.includes(OLD), `the stale Handoff is missing:\n${first}`);
check(first.includes("## Notebook (revision 1") && first.includes("may be stale"), `the notebook is not marked:\n${first}`);
check(s.requests.length === retry.n, `requests after the retry: ${s.requests.length - retry.n}`);
check(out.includes("Emergency rollover: the context overflowed"), `the user was not told: ${out}`);
const seen = globalThis[Symbol.for("pi-history.test.compactions")];
const over = seen.filter((c) => c.reason === "overflow");
check(over.length === 1 && over[0].willRetry === true, `session_before_compact calls: ${JSON.stringify(seen)}`);
const comps = s.branch().filter((e) => e.type === "compaction");
const em = comps[comps.length - 1];
check(comps.length === 2 && em.details.reason === "emergency" && em.fromHook, `compactions: ${JSON.stringify(comps.map((c) => c.details))}`);
// Pi's keepRecentTokens cut, not the Tail of 0.
check(em.firstKeptEntryId === over[0].firstKeptEntryId, `emergency cut ${em.firstKeptEntryId}, Pi's ${over[0].firstKeptEntryId}`);
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("emergency: ok");
