// A test-only extension, loaded before pi-history's, that proposes its own
// compaction at the first agent_before_settle of the session (Pi 1.6).
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let done = false;
	pi.on("agent_before_settle" as any, async (ev: any) => {
		if (done) return undefined;
		done = true;
		return { entries: [...ev.entries, { type: "compaction", summary: "PROPOSER SUMMARY", firstKeptEntryId: null, details: { proposer: true } }] };
	});
}
