// Pi 0.73.1's SDK for the end-to-end scripts (resolved from the extension's
// own node_modules): what harness.mjs needs, under the same names as
// pi16/pi.mjs.
export { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";
export { AuthStorage, createAgentSession, DefaultResourceLoader, ModelRegistry, SessionManager, SettingsManager } from "@mariozechner/pi-coding-agent";
export const version = "0.73";
