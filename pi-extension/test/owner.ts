// A test-only extension that owns compaction (docs/spec-notes.md, "Compaction ownership"): it writes
// every compaction's summary itself in session_before_compact.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_compact", async (ev: any) => {
		const p = ev.preparation;
		return { compaction: { summary: "OWNER SUMMARY of the earlier work.", firstKeptEntryId: p.firstKeptEntryId, tokensBefore: p.tokensBefore, details: { owner: true } } };
	});
}
