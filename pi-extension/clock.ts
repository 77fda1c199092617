// The clock of the extension's timers: the process's own, or one a test
// installed on globalThis (Symbol.for("pi-history.clock")) before the
// extension loaded, so the idle rollover can be tested on a fake clock.

/** What the idle timer needs of a clock. */
export interface Clock {
	now(): number;
	setTimeout(fn: () => void, ms: number): unknown;
	clearTimeout(handle: unknown): void;
}

/** The process's own clock. */
export const realClock: Clock = {
	now: () => Date.now(),
	setTimeout: (fn, ms) => {
		const h = setTimeout(fn, ms);
		h.unref?.(); // an idle timer never keeps Pi alive
		return h;
	},
	clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** The clock a test installed on globalThis before loading the extension, else the real one. */
export function installedClock(): Clock {
	const c: unknown = Reflect.get(globalThis, Symbol.for("pi-history.clock"));
	if (typeof c === "object" && c !== null && typeof Reflect.get(c, "now") === "function" && typeof Reflect.get(c, "setTimeout") === "function") return c as Clock;
	return realClock;
}
