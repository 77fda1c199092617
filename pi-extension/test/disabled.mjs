// enabled: false in the service's configuration turns the extension off in
// Pi: no guidance in the prompt, its tools out of the active set, no
// trailers and no status line; turning it on again (an edit the service
// reads without a restart) brings everything back at the next prompt.

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, check, lastToolResult, makeFiles, msgText, say, scripted, startSession } from "./harness.mjs";

const root = mkdtempSync(join(tmpdir(), "pih-off-"));
const config = join(process.env.PI_HISTORY_DATA, "note-context.json");
const setEnabled = (on, stamp) => {
	writeFileSync(config, JSON.stringify({ enabled: on, leadTokens: 20000, fallbackBufferTokens: 2000, minReclaimTokens: 10000, statusStepTokens: stamp }));
};
// The prompt as the model gets it: 0.73.1's systemPrompt, or 1.6's system messages.
const prompt = (ctx) => (ctx.systemPrompt ?? "") + ctx.system.map((m) => JSON.stringify(m)).join("\n");
let s;
const ours = ["notes", "new_context", "history"];
const plan = [
	// turned off
	(ctx) => {
		check(!prompt(ctx).includes("Keep a short working checkpoint"), "guidance in the prompt while disabled");
		check(!s.session.getActiveToolNames().some((n) => ours.includes(n)), `our tools active while disabled: ${s.session.getActiveToolNames()}`);
		return call("read", { path: "a.txt" }, "r1");
	},
	(ctx) => {
		const t = msgText(lastToolResult(ctx));
		check(!t.includes("[note-context"), `status line or trailer while disabled: ${t}`);
		check(!ctx.messages.some((m) => msgText(m).includes("this-message-id=")), "trailers while disabled");
		return say("Read it.");
	},
	// on again
	(ctx) => {
		check(prompt(ctx).includes("Keep a short working checkpoint"), "no guidance once enabled again");
		check(ours.every((n) => s.session.getActiveToolNames().includes(n)), `our tools not back: ${s.session.getActiveToolNames()}`);
		check(ctx.messages.some((m) => m.role === "user" && msgText(m).includes("this-message-id=")), "no trailers once enabled again");
		return call("notes", { sections: { Task: "back on" } }, "n1");
	},
	(ctx) => {
		check(!lastToolResult(ctx).isError, `notes failed once enabled again: ${msgText(lastToolResult(ctx))}`);
		return say("Noted.");
	},
];
const script = scripted(plan);
setEnabled(false, 40000);
s = await startSession(root, { contextWindow: 60000, model: script.model });
makeFiles(s.cwd, { "a.txt": { tokens: 10, marker: "hello" } });
await s.prompt("Read a.txt.");
setEnabled(true, 40001); // another size, so the service sees a new file
await s.prompt("Now write a note.");
script.done();
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("disabled: ok");
