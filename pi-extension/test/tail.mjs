// The Tail and contextManagement's settings (seed B). Pi's global settings
// set contextManagement.tailTokens; the project's settings override it key
// by key, and its invalid and obsolete values are ignored with one warning
// each when the session loads. A rollover then keeps only the Tail of raw
// history: with tailTokens 0, from the agent's own new_context call on,
// where Pi's keepRecentTokens would have kept the reads before it.
// PI_TEST_TAIL=unset runs the same conversation without tailTokens: Pi's
// keepRecentTokens decides (the default, seed A).

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, captured, check, lastToolResult, makeFiles, msgText, piVersion, say, scripted, startSession } from "./harness.mjs";

// PI_TEST_TAIL=untrusted (Pi 1.6): Pi does not trust the project, so its
// settings are not read: the global tailTokens 5000 keeps small3's read.
const variant = process.env.PI_TEST_TAIL ?? "";
if (variant === "untrusted" && piVersion !== "1.6") {
	console.log("tail: ok"); // Pi 0.73.1 trusts every project
	process.exit(0);
}
const withTail = variant !== "unset";
const zeroTail = withTail && variant !== "untrusted";
const root = mkdtempSync(join(tmpdir(), "pih-tail-"));
let next;
const plan = [
	() => call("read", { path: "big1.txt" }, "r1"),
	() => call("read", { path: "big2.txt" }, "r2"),
	() => call("read", { path: "small3.txt" }, "r3"),
	() => call("notes", { sections: { Task: "Read the files.", Next: "summarise" } }, "n1"),
	() => call("new_context", { handoff: "Done: read big1 and big2.\nNext: summarise them." }, "c1"),
	(ctx) => {
		check(!lastToolResult(ctx).isError, `new_context refused: ${msgText(lastToolResult(ctx))}`);
		return say("Rolling over.");
	},
	// the continuation, in the new window (checked below)
	(ctx) => {
		next = ctx;
		return say("Continuing.");
	},
];
const script = scripted(plan);
const globalCM = withTail ? { contextManagement: { tailTokens: 5000, idleRollover: { enabled: false, minTokens: 1000 } } } : {};
// The project overrides tailTokens (0: only the rollover call and what follows),
// keeps the global idleRollover (its own is invalid), and holds an obsolete key.
const projectCM = withTail ? { contextManagement: { tailTokens: 0, idleRollover: { enabled: "yes" }, warningThreshold: 0.8 } } : undefined;
let s;
const out = await captured(async () => {
	s = await startSession(root, {
		contextWindow: 200000,
		model: script.model,
		settings: globalCM,
		projectSettings: projectCM,
		projectTrusted: variant === "untrusted" ? false : undefined,
	});
});
if (zeroTail) {
	const lines = out.split("\n").filter((l) => l.startsWith("pi-history: contextManagement"));
	check(lines.length === 2, `warnings at session load: ${JSON.stringify(lines)}`);
	check(lines.some((l) => l.includes("holds warningThreshold (obsolete)") && l.includes("compaction.keepRecentTokens")), `no obsolete-key warning: ${out}`);
	check(lines.some((l) => l.includes('contextManagement.idleRollover in') && l.includes('{"enabled":"yes"}') && l.includes("Ignored for that file")), `no idleRollover warning: ${out}`);
} else {
	check(!out.includes("pi-history: contextManagement"), `warnings without contextManagement: ${out}`);
}
// keepRecentTokens 8000 keeps small3's read (the cut falls after big2's result); so would the global
// tailTokens 5000; the project's 0 keeps none.
makeFiles(s.cwd, { "big1.txt": { tokens: 12000 }, "big2.txt": { tokens: 12000 }, "small3.txt": { tokens: 3000 } });
const settingsBefore = readFileSync(join(root, "agent", "settings.json"), "utf8");
const more = await captured(() => s.prompt("Read big1.txt, big2.txt and small3.txt, take notes and start a fresh window."));
check(!more.includes("pi-history: contextManagement"), `warnings repeated during the session: ${more}`);
script.done();
check(next && msgText(next.messages[0]).includes("rollover reason: model"), `new window: ${next && msgText(next.messages[0]).slice(0, 200)}`);
const reads = next.messages.filter((m) => m.role === "toolResult" && m.toolName === "read");
if (zeroTail) check(reads.length === 0, `a Tail of 0 kept ${reads.length} read results`);
else check(reads.length === 1, `${variant}: ${reads.length} read results kept, want small3's`);

const branch = s.branch();
const comp = branch.find((e) => e.type === "compaction");
check(comp, "no rollover");
const kept = branch.find((e) => e.id === comp.firstKeptEntryId);
const keptCall = kept?.type === "message" && kept.message.role === "assistant" && kept.message.content.some((b) => b.type === "toolCall" && b.name === "new_context");
if (zeroTail) check(keptCall, `a Tail of 0 keeps from ${JSON.stringify(kept?.message?.content ?? kept?.type)}, not the new_context call`);
else check(!keptCall, "without tailTokens the cut is at the new_context call");
check(readFileSync(join(root, "agent", "settings.json"), "utf8") === settingsBefore, "the extension changed Pi's settings");
check(s.errors.length === 0, `extension errors: ${JSON.stringify(s.errors)}`);
s.dispose();
console.log("tail: ok");
