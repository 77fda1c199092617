// A test-only extension loaded after pi-history's: it records every tool
// result as the handlers before it left it (Pi chains tool_result), so a
// scenario can check what scripts and the model finally get.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const seen: any[] = ((globalThis as any)[Symbol.for("pi-history.test.results")] = []);
	pi.on("tool_result", async (ev: any) => {
		const text = (ev.content ?? []).map((b: any) => b.text ?? "").join("");
		seen.push({ toolName: ev.toolName, isError: ev.isError, structuredContent: ev.structuredContent, details: ev.details, text });
		return undefined;
	});
}
