// A test-only extension: records what Pi hands session_before_compact (the
// reason and Pi's own cut), so a scenario can compare the compaction that
// was written with Pi's preparation.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const seen: Array<{ reason: unknown; willRetry: unknown; firstKeptEntryId: string }> = [];
	Reflect.set(globalThis, Symbol.for("pi-history.test.compactions"), seen);
	pi.on("session_before_compact", async (ev) => {
		seen.push({ reason: Reflect.get(ev, "reason"), willRetry: Reflect.get(ev, "willRetry"), firstKeptEntryId: ev.preparation.firstKeptEntryId });
		return undefined;
	});
}
