// Transcript previews of note writes and Handoffs (seed B): the text shows
// while the model is still writing it, as Pi hands the growing tool-call
// arguments to renderCall. Collapsed, a preview is at most eight rendered
// lines, heading and omission line included, and follows the newest text;
// expanded, it is the whole text. Other calls keep a one-line summary.

import type { Theme, ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { Component } from "@mariozechner/pi-tui";
import { truncateToWidth, wrapTextWithAnsi } from "@mariozechner/pi-tui";

/** Rendered lines of a collapsed preview, heading and omission line included. */
export const PREVIEW_LINES = 8;

/** A heading and, for writes, the text being written. */
class Preview implements Component {
	private heading = "";
	private body = "";
	private expanded = false;
	private hint = "";
	private theme?: Theme;

	set(theme: Theme, heading: string, body: string, expanded: boolean, hint: string): void {
		this.theme = theme;
		this.heading = heading;
		this.body = body;
		this.expanded = expanded;
		this.hint = hint;
	}

	invalidate(): void {}

	render(width: number): string[] {
		const w = Math.max(1, width);
		const out = [truncateToWidth(this.heading, w)];
		if (!this.body) return out;
		const th = this.theme;
		// A newline just streamed in opens no empty line of its own.
		const lines = this.body.replace(/\n+$/, "").split("\n").flatMap((l) => (l === "" ? [""] : wrapTextWithAnsi(l, w)));
		const paint = (l: string) => (th ? th.fg("toolOutput", l) : l);
		if (this.expanded || lines.length <= PREVIEW_LINES - 1) return out.concat(lines.map(paint));
		// Collapsed: the newest lines, under a line saying how many came before.
		const keep = PREVIEW_LINES - 2;
		const omitted = `… ${lines.length - keep} earlier line${lines.length - keep === 1 ? "" : "s"}${this.hint}`;
		return out.concat(truncateToWidth(th ? th.fg("muted", omitted) : omitted, w), lines.slice(-keep).map(paint));
	}
}

/** The arguments a notes call may have streamed so far (any may be missing or partial). */
interface NotesArgs {
	op?: string;
	name?: string;
	content?: string;
	text?: string;
	ref?: string;
	query?: string;
	sections?: Record<string, string>;
	replaceAll?: boolean;
	reviewed?: boolean;
}

/** The arguments a new_context call may have streamed so far. */
interface NewContextArgs {
	handoff?: string;
	userRequested?: boolean;
}

/** The render context Pi passes to renderCall. */
type Ctx = Parameters<NonNullable<ToolDefinition["renderCall"]>>[2];

/** renderCall of notes: a write's or append's text, the sections a notebook write replaces, else a summary. */
export function renderNotesCall(args: object | undefined, theme: Theme, ctx: Ctx): Component {
	// Partial while they stream: Pi parses what has arrived so far.
	const a: NotesArgs = args ?? {};
	const title = theme.fg("toolTitle", theme.bold("notes"));
	let what = "";
	let body = "";
	if (a.op === "write" || a.op === "append") {
		body = str(a.op === "write" ? a.content : a.text);
		what = `${a.op} ${str(a.name) || "…"}`;
	} else if (a.op) {
		what = [str(a.op), str(a.name) || str(a.ref) || (typeof a.query === "string" ? JSON.stringify(a.query) : "")].filter(Boolean).join(" ");
	} else if (a.sections && typeof a.sections === "object" && Object.keys(a.sections).length > 0) {
		const s = a.sections;
		const names = Object.keys(s);
		what = `${a.replaceAll ? "replace notebook with" : "sections"} ${names.join(", ")}`;
		body = names.map((n) => (str(s[n]) ? `## ${n}\n${str(s[n])}` : `## ${n} (deleted)`)).join("\n\n");
	} else if (a.reviewed) {
		what = "reviewed";
	}
	return preview(theme, ctx, `${title} ${theme.fg("accent", what)}${size(theme, body, ctx)}`, body);
}

/** renderCall of new_context: the Handoff as it is written; a saved one still only requests the rollover. */
export function renderNewContextCall(args: object | undefined, theme: Theme, ctx: Ctx): Component {
	const a: NewContextArgs = args ?? {};
	const body = str(a.handoff);
	// A saved Handoff is a request: the checkpoint comes after the batch.
	const what = ctx.isError ? "rollover refused" : body ? (ctx.argsComplete ? "rollover requested with a Handoff" : "writing a Handoff") : "rollover requested";
	const who = a.userRequested ? " (the user asked)" : "";
	return preview(theme, ctx, `${theme.fg("toolTitle", theme.bold("new_context"))} ${theme.fg("accent", what + who)}${size(theme, body, ctx)}`, body);
}

/** A streamed argument as text ("" when absent or not a string: the model may send anything). */
const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** The heading's size note: characters so far, and an ellipsis while the arguments stream. */
function size(theme: Theme, body: string, ctx: Ctx): string {
	if (!body) return "";
	return theme.fg("muted", ` (${[...body].length} characters${ctx.argsComplete ? "" : "…"})`);
}

function preview(theme: Theme, ctx: Ctx, heading: string, body: string): Component {
	const c = ctx.lastComponent instanceof Preview ? ctx.lastComponent : new Preview();
	// Pi 1.6 names the user's expand key (none when it has no keybindings
	// loaded); 0.73.1 has no keyText.
	const key = typeof ctx.keyText === "function" ? ctx.keyText("app.tools.expand") : "";
	const hint = key ? ` (${key} to expand)` : " (expand to read all)";
	c.set(theme, heading, body, ctx.expanded, hint);
	return c;
}
