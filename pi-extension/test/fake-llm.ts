// An offline model for the real `pi` command: registers the faux provider as
// provider "fake" with a scripted conversation that uses the extension's
// tools.
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";

export default function (pi: ExtensionAPI) {
	const faux = registerFauxProvider({ api: "faux-cli", provider: "fake" });
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
	pi.registerProvider("fake", {
		baseUrl: "http://127.0.0.1:1",
		apiKey: "dummy-key",
		api: "faux-cli",
		models: [{ id: "faux-1", name: "Faux", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 16384 }],
	});
}
