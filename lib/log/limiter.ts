/**
 * Log lines whose rate a pod author controls (a skipped probe, a refused CNI ADD, a malformed
 * pod, an unmatched kubelet connect), kept loud without letting a tenant flood the node's journal:
 * per key (a reason and the namespace it concerns) the first lines of a quiet spell (`burst`, 10:
 * a pod's few problems all show) are logged in full, at once, so the operator sees which pod and
 * why; the ones after them are counted and summed up in one line per key per `intervalMs` ("and
 * 1240 more ProbeIgnored lines about namespace x in the last 60 s"). A key whose window saw
 * nothing closes, so its next line is logged in full again. At most `maxKeys` windows are open; a
 * new key beyond them shares one overflow window, so memory
 * stays bounded whatever the tenants name. Metrics and Events count every occurrence on their own.
 *
 * `LogWindows` is the window machinery alone (the Event recorder's drops use it with their own
 * lines, kube/event_drops.ts); `LogLimiter` gives it the agent's key and summary line. The agent
 * installs one limiter for the process while it runs (`installLogLimiter`), as main configures
 * LogTape for the process: the lines come from many modules' own loggers, and with no limiter
 * installed (unit tests, one-shot commands) every line is logged in full.
 */
import type { Logger } from "@logtape/logtape";
import type { Timers } from "../time/timers.ts";

/** Called when a window with occurrences after its first ends: how many, and the last one's `what`. */
type Summarize = (count: number, last: string) => void;

interface Window {
  timer: unknown;
  /** Occurrences logged in full in this window. */
  full: number;
  /** Occurrences since the window's line. */
  count: number;
  last: string;
  summarize: Summarize;
}

/** The key the windows beyond `maxKeys` share. */
const OVERFLOW = "\u0000overflow";

export interface LogWindowsOptions {
  /** How often the occurrences after a key's first are summed up, in ms. */
  intervalMs: number;
  timers: Timers;
  /** Windows open at once; a new key beyond them shares one overflow window. Default 256. */
  maxKeys?: number;
  /** Occurrences of a key logged in full in a quiet spell before the rest are counted. Default 1. */
  burst?: number;
  /** Sums up the overflow window (whose `last` is the last `what`); required for a bounded key set only if it can overflow. */
  summarizeOverflow?: Summarize;
}

/** Counting windows per key; see the module comment. */
export class LogWindows {
  readonly #options: LogWindowsOptions;
  readonly #maxKeys: number;
  readonly #windows = new Map<string, Window>();

  constructor(options: LogWindowsOptions) {
    this.#options = options;
    this.#maxKeys = options.maxKeys ?? 256;
  }

  /**
   * Notes `count` occurrences of `key` (the last named `what`). True when the caller logs this one
   * in full (the first of a quiet spell, or of the overflow window); false when it was counted
   * for the window's summary, which `summarize` (of the window's first occurrence) writes.
   */
  admit(key: string, what: string, summarize: Summarize, count = 1): boolean {
    if (!this.#windows.has(key) && this.#windows.size >= this.#maxKeys) {
      key = OVERFLOW;
      summarize = this.#options.summarizeOverflow ?? summarize;
    }
    const window = this.#windows.get(key);
    if (window && window.full < (this.#options.burst ?? 1)) {
      window.full++;
      return true;
    }
    if (window) {
      window.count += count;
      window.last = what;
      return false;
    }
    this.#open(key, summarize, 1);
    return true;
  }

  /** Windows open now (at most maxKeys + 1). */
  get size(): number {
    return this.#windows.size;
  }

  /** Writes what the open windows hold and cancels their timers. */
  stop(): void {
    for (const key of [...this.#windows.keys()]) this.#close(key, false);
  }

  /** Opens a window in which `full` occurrences were logged in full already. */
  #open(key: string, summarize: Summarize, full: number): void {
    const timer = this.#options.timers.setTimeout(
      () => this.#close(key, true),
      this.#options.intervalMs,
    );
    this.#windows.set(key, { timer, full, count: 0, last: "", summarize });
  }

  /** Ends a window with its summary; a window that had occurrences opens the next one. */
  #close(key: string, reopen: boolean): void {
    const window = this.#windows.get(key)!;
    this.#options.timers.clearTimeout(window.timer);
    this.#windows.delete(key);
    if (window.count === 0) return;
    window.summarize(window.count, window.last);
    // A flood that goes on is summed up only: the next line in full comes after a quiet window.
    if (reopen) this.#open(key, window.summarize, Infinity);
  }
}

/** The levels a limited line may have. */
export type LimitedLevel = "info" | "warning" | "error";

/** A logger's methods a limited line is written through. */
export type LimitedLogger = Pick<Logger, LimitedLevel>;

/**
 * What a line is about: `reason` from a closed set in the code (the Event reason where there is
 * one), `namespace` the tenant's ("" for none), `subject` the pod or thing it names (shown as the
 * last one in a summary).
 */
export interface LimitKey {
  reason: string;
  namespace: string;
  subject?: string;
}

/** The key of a line about `pod`, by `reason` (the Event reason where the line has an Event). */
export function aboutPod(reason: string, pod: { namespace: string; name: string }): LimitKey {
  return { reason, namespace: pod.namespace, subject: `pod ${pod.namespace}/${pod.name}` };
}

/**
 * The key of a line about an object a pod author wrote that may be malformed: its
 * metadata's namespace and name where they are strings.
 */
export function aboutInput(reason: string, input: unknown): LimitKey {
  const meta = (input as { metadata?: Record<string, unknown> } | null)?.metadata;
  const field = (name: string) => {
    const value = meta !== null && typeof meta === "object" ? meta[name] : undefined;
    return typeof value === "string" ? value : "";
  };
  return aboutPod(reason, { namespace: field("namespace"), name: field("name") });
}

export interface LogLimiterOptions {
  /** Default 60 000. */
  intervalMs?: number;
  timers: Timers;
  /** Default 256 (reasons × namespaces). */
  maxKeys?: number;
  /** Lines of a key logged in full in a quiet spell (a pod's few problems all show). Default 10. */
  burst?: number;
  /** Writes the overflow window's summary. */
  overflowLogger: LimitedLogger;
}

/** Rate-limits lines by (reason, namespace); see the module comment. */
export class LogLimiter {
  readonly #windows: LogWindows;
  readonly #seconds: number;
  readonly #burst: number;

  constructor(options: LogLimiterOptions) {
    const intervalMs = options.intervalMs ?? 60_000;
    const burst = this.#burst = options.burst ?? 10;
    this.#seconds = intervalMs / 1000;
    this.#windows = new LogWindows({
      intervalMs,
      timers: options.timers,
      maxKeys: options.maxKeys,
      burst,
      summarizeOverflow: (count, last) =>
        options.overflowLogger.warning(
          "And {count} more lines in the last {seconds} s about reasons and namespaces beyond the {maxKeys} summed up one by one; the last: {last}",
          { count, seconds: this.#seconds, maxKeys: options.maxKeys ?? 256, last },
        ),
    });
  }

  /**
   * Logs `message` with `values` through `logger` at `level` when it is the first of its key's
   * window (or counts it for the key's summary line).
   */
  log(
    logger: LimitedLogger,
    level: LimitedLevel,
    key: LimitKey,
    message: string,
    values: Record<string, unknown>,
  ): void {
    const { reason, namespace } = key;
    const what = key.subject ?? "(unnamed)";
    const burst = this.#burst;
    const summarize = (count: number, last: string) =>
      logger[level](
        "And {count} more {reason} lines about namespace {namespace} in the last {seconds} s (the first {burst} of a quiet spell in full; metrics and Events count each); the last: {last}",
        { count, reason, namespace: namespace || "(none)", seconds: this.#seconds, burst, last },
      );
    if (this.#windows.admit(`${reason}\u0000${namespace}`, what, summarize)) {
      logger[level](message, values);
    }
  }

  /** Writes what the open windows hold and cancels their timers. */
  stop(): void {
    this.#windows.stop();
  }

  /** Keys with a window open now. */
  get openKeys(): number {
    return this.#windows.size;
  }
}

let installed: LogLimiter | undefined;

/** Makes `limiter` the process's for `limitedLog`; returns the undo (the one before comes back). */
export function installLogLimiter(limiter: LogLimiter): () => void {
  const before = installed;
  installed = limiter;
  return () => {
    if (installed === limiter) installed = before;
  };
}

/**
 * Logs a line whose rate a pod author controls, through the installed limiter (see the module
 * comment), or in full when none is installed.
 */
export function limitedLog(...line: Parameters<LogLimiter["log"]>): void {
  if (installed) return installed.log(...line);
  const [logger, level, , message, values] = line;
  logger[level](message, values);
}
