// pi-history's Pi extension: the notes, new_context and history tools and the
// context-window hooks. Every decision and all storage belong to the
// pi-history service; the extension reports what happens in Pi, applies the
// service's answers, and keeps the service's copy of the session current
// before asking it anything.
//
// Pi 1.6 first, Pi 0.73.1 still: what the host offers is learned at run time
// (see Caps in state.ts) and every capability is off until it is seen, so an
// unknown host gets the 0.73.1 behaviour. On a host with actionable
// boundaries (turn_end and agent_before_settle return entries) a rollover is
// a compaction entry plus a continuation message returned from
// agent_before_settle (model, user, host) or from the turn_end of the
// checkpoint (fallback), written inside the run with continue: true. On
// 0.73.1 it is ctx.compact() (this extension then supplies the summary in
// session_before_compact) followed by a continuation message that starts the
// next request, at agent_end or at the checkpoint's turn_end.
//
// The modules, by job:
//   state.ts     what the host offers, the session's volatile state, the shared Runtime
//   service.ts   finding, starting and proving the service; one HTTP request
//   client.ts    the API's routes, typed from api-types.ts (generated from api/openapi.json)
//   session.ts   keeping the service current: pushes, configuration, state-machine events
//   rollover.ts  steers and rollovers (boundary entries or ctx.compact())
//   tools.ts     the notes and new_context tools; history.ts the history tool;
//                results.ts what they return
//   hooks.ts     every Pi event the extension listens to
//   messages.ts  reading and shaping Pi's entries and messages
//   context.ts   the /context command; prepare.ts /rollover (and the input
//                held while a preparation runs)
//   settings.ts  contextManagement in Pi's settings files (Tail, idle rollover)
//   idle.ts      the idle rollover before the prompt cache expires; clock.ts its clock
//   text.ts      every text the model sees

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { registerContextCommand } from "./context.ts";
import { registerHistory } from "./history.ts";
import { registerHooks } from "./hooks.ts";
import { registerRolloverCommand } from "./prepare.ts";
import { Runtime } from "./state.ts";
import { registerNewContext, registerNotes } from "./tools.ts";

export default function piHistory(pi: ExtensionAPI): void {
	const rt = new Runtime(pi);
	// What the tests (and shutdown) use: wait for hook work, see whether a
	// rollover is under way, reach the service and the capabilities seen.
	Reflect.set(globalThis, Symbol.for("pi-history.extension"), {
		idle: () => rt.idle(),
		busy: () => rt.busy(),
		service: rt.service,
		caps: rt.caps,
	});
	registerNotes(rt);
	registerNewContext(rt);
	registerHistory(rt);
	registerHooks(rt);
	registerContextCommand(rt);
	registerRolloverCommand(rt);
}
