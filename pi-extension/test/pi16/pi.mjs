// Pi 1.6's SDK for the end-to-end scripts (resolved from this folder's
// node_modules): what harness.mjs needs, under the same names as pi073.mjs.
export { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
export { createAgentSession, DefaultResourceLoader, ModelRuntime, SessionManager, SettingsManager } from "@earendil-works/pi-coding-agent";
export const version = "1.6";
