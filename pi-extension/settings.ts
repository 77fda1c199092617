// Seed B's settings under contextManagement in Pi's own settings files: the
// global ~/.pi/agent/settings.json and the project's .pi/settings.json when
// Pi trusts the project. A project value overrides the global one key by key
// (tailTokens, idleRollover.enabled, idleRollover.minTokens). A value that is
// not valid is ignored for the file it is in; an obsolete key (seed B's old
// thresholds) or a block that is not an object is ignored too. Each problem
// is reported once per session load. The extension only reads these files:
// it never writes configuration.
//
// Each file is read on its own (through Pi's SettingsManager, which parses
// and migrates in memory only), not through pi.getSettings(): Pi's merged
// view would let a bad project value hide a good global one, and a value
// must be dropped for its own file only (docs/decisions/310).

import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import { getAgentDir, SettingsManager } from "@mariozechner/pi-coding-agent";

/** What contextManagement configures (seed B's keys). */
export interface ContextManagement {
	/** Tail of a normal rollover, in Pi's estimated tokens; undefined: Pi's keepRecentTokens decides (seed A). */
	tailTokens?: number;
	idleRollover: { enabled: boolean; minTokens: number };
}

/** idleRollover.minTokens when no file sets it (seed B's default). */
export const defaultIdleMinTokens = 200000;

/** Keys seed B names as obsolete: its former thresholds, now Pi's compaction settings. */
export const obsoleteKeys: readonly string[] = ["warningThreshold", "emergencyThreshold", "safetyMarginTokens", "outputReserveTokens"];

const knownKeys = new Set(["tailTokens", "idleRollover"]);

/** One settings file as read: where it is (for the warnings) and its parsed content. */
export interface SettingsFile {
	where: string;
	settings: unknown;
}

/** The defaults: no Tail of its own (Pi's keepRecentTokens), idle rollover on from 200,000 tokens. */
export function defaultContextManagement(): ContextManagement {
	return { idleRollover: { enabled: true, minTokens: defaultIdleMinTokens } };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const shown = (v: unknown): string => {
	const s = JSON.stringify(v);
	return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
};

/**
 * Merges the contextManagement blocks of files (global first, then the
 * project), key by key, and says what was ignored and why, one warning per
 * problem.
 */
export function parseContextManagement(files: readonly SettingsFile[]): { cm: ContextManagement; warnings: string[] } {
	const cm = defaultContextManagement();
	const warnings: string[] = [];
	const native = "context thresholds are Pi's own compaction settings (compaction.enabled, compaction.reserveTokens, compaction.keepRecentTokens)";
	for (const f of files) {
		if (!isObject(f.settings) || !("contextManagement" in f.settings)) continue;
		const block = f.settings.contextManagement;
		if (!isObject(block)) {
			warnings.push(`pi-history: contextManagement in ${f.where} is ${shown(block)}, not an object; it is ignored. Only tailTokens and idleRollover belong there; ${native}.`);
			continue;
		}
		const other = Object.keys(block).filter((k) => !knownKeys.has(k));
		if (other.length > 0) {
			const old = other.filter((k) => obsoleteKeys.includes(k));
			const what = old.length === other.length ? "obsolete" : "not known";
			warnings.push(`pi-history: contextManagement in ${f.where} holds ${other.join(", ")} (${what}); ignored. Only tailTokens and idleRollover belong there; ${native}. Remove them when convenient.`);
		}
		if ("tailTokens" in block) {
			if (isCount(block.tailTokens)) cm.tailTokens = block.tailTokens;
			else warnings.push(`pi-history: contextManagement.tailTokens in ${f.where} is ${shown(block.tailTokens)}; it must be a nonnegative integer (tokens). Ignored for that file.`);
		}
		if ("idleRollover" in block) {
			const idle = block.idleRollover;
			const enabledOk = isObject(idle) && (idle.enabled === undefined || typeof idle.enabled === "boolean");
			const minOk = isObject(idle) && (idle.minTokens === undefined || isCount(idle.minTokens));
			const extra = isObject(idle) ? Object.keys(idle).filter((k) => k !== "enabled" && k !== "minTokens") : [];
			if (!isObject(idle) || !enabledOk || !minOk || extra.length > 0) {
				warnings.push(
					`pi-history: contextManagement.idleRollover in ${f.where} is ${shown(idle)}; it must be an object with enabled (true or false) and minTokens (a nonnegative integer), both optional. Ignored for that file.`,
				);
				continue;
			}
			if (typeof idle.enabled === "boolean") cm.idleRollover.enabled = idle.enabled;
			if (isCount(idle.minTokens)) cm.idleRollover.minTokens = idle.minTokens;
		}
	}
	return { cm, warnings };
}

/** Pi's settings files for ctx: the global one, then the project's when Pi trusts the project. */
export function settingsFiles(ctx: ExtensionContext): SettingsFile[] {
	const agentDir = getAgentDir();
	const sm = SettingsManager.create(ctx.cwd, agentDir);
	const files: SettingsFile[] = [{ where: `${agentDir}/settings.json`, settings: sm.getGlobalSettings() }];
	// Pi 1.6 says whether the project is trusted; 0.73.1 has no such notion
	// and always reads the project's settings.
	const trusted = typeof ctx.isProjectTrusted === "function" ? ctx.isProjectTrusted() : true;
	if (trusted) files.push({ where: `${ctx.cwd}/.pi/settings.json`, settings: sm.getProjectSettings() });
	return files;
}

/** Reads contextManagement for ctx; warnings are the problems found (shown once per session load by the caller). */
export function readContextManagement(ctx: ExtensionContext): { cm: ContextManagement; warnings: string[] } {
	try {
		return parseContextManagement(settingsFiles(ctx));
	} catch (e) {
		return { cm: defaultContextManagement(), warnings: [`pi-history: Pi's settings could not be read (${e instanceof Error ? e.message : String(e)}); contextManagement uses its defaults.`] };
	}
}
