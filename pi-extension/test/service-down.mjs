// The service is down at start (and autostart is off or finds no binary):
// the session runs with Pi's own behaviour, our tools fail with a message
// saying how to start the service, and Pi's own compaction runs.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, makeFiles, msgText, say, scripted, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-down-"));
const plan = [
	() => call("notes", { sections: { Task: "x" } }, "n1"),
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.isError && msgText(m).includes("pi-history service is not reachable") && msgText(m).includes("serve"), `notes error: ${msgText(m)}`);
		// Why it is down, when the test knows (PI_TEST_DOWN_BECAUSE).
		const because = process.env.PI_TEST_DOWN_BECAUSE;
		check(!because || msgText(m).includes(because), `notes error does not say "${because}": ${msgText(m)}`);
		return call("history", { query: "x" }, "h1");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(m.isError && msgText(m).includes("pi-history service is not reachable"), `history error: ${msgText(m)}`);
		return call("new_context", {}, "c1");
	},
	(ctx) => {
		check(lastToolResult(ctx).isError, "new_context did not fail");
		return call("read", { path: "a.txt" }, "r1");
	},
	(ctx) => {
		const m = lastToolResult(ctx);
		check(!m.isError && msgText(m).includes("hello") && !msgText(m).includes("[note-context"), `read result: ${msgText(m)}`);
		check(!ctx.messages.some((x) => msgText(x).includes("this-message-id")), "trailers without a service");
		return say("Done without the service.");
	},
	// Pi's own compaction asks the model for a summary.
	() => say("## Goal\nPi's own summary."),
];
const script = scripted(plan);
const s = await startSession(root, {
	contextWindow: 60000,
	// Pi 1.6 compacts only when something falls before the kept tail.
	compaction: { keepRecentTokens: 20 },
	model: script.model,
});
makeFiles(s.cwd, { "a.txt": { tokens: 10, marker: "hello" } });
const t0 = Date.now();
await s.prompt("Try the tools.");
await s.session.compact();
script.done();
check(Date.now() - t0 < 20000, "the session was slowed down by the missing service");
const comps = s.journal().filter((e) => e.type === "compaction");
check(comps.length === 1 && !comps[0].fromHook && comps[0].summary.includes("Pi's own summary"), `compactions: ${JSON.stringify(comps)}`);
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("service-down: ok");
