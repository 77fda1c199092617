// An offline model for Pi 1.6's real `pi` command: registers Pi's faux
// provider (provider "faux", model "faux-1") with the scripted conversation
// of ../fake-llm.ts, which uses the extension's tools.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";

export default function (pi: ExtensionAPI) {
	const faux = fauxProvider({ models: [{ id: "faux-1", contextWindow: 128000, maxTokens: 16384 }] });
	const lastTool = (ctx: any) => {
		for (let i = ctx.messages.length - 1; i >= 0; i--) if (ctx.messages[i].role === "toolResult") return ctx.messages[i];
		return undefined;
	};
	const text = (m: any) => (m?.content ?? []).map((b: any) => b.text ?? "").join("");
	faux.setResponses([
		() => fauxAssistantMessage([fauxText("Noting."), fauxToolCall("notes", { sections: { Task: "CLI check", Next: "search" } }, { id: "c1" })], { stopReason: "toolUse" }),
		() => fauxAssistantMessage([fauxToolCall("history", { query: "CLI check" }, { id: "c2" })], { stopReason: "toolUse" }),
		(ctx: any) => {
			const r = lastTool(ctx);
			const ok = r && !r.isError && text(r).includes("[history entry=");
			return fauxAssistantMessage(ok ? "CLI-OK: history found the notes call." : `CLI-FAIL: ${text(r)}`);
		},
	]);
	pi.registerProvider(faux.provider);
}
