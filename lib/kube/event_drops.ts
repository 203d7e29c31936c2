/**
 * The Event recorder's drops, kept loud without becoming a flood of their own: every drop is
 * counted by reason (for `lace_events_dropped_total{reason}`, through `onDrop`) and logged, but
 * per reason only the first drop of a quiet spell gets its own line; the ones after it are summed
 * up in one line per `intervalMs` (how many, and the last one). A tenant who makes a thousand
 * Events a second gets the operator one log line a minute per reason, not a thousand.
 */
import { getLogger, type Logger } from "@logtape/logtape";
import type { Timers } from "../time/timers.ts";
import { LogWindows } from "../log/limiter.ts";

/**
 * Why an Event was not written. Reasons are a closed set: the metric's label never carries a
 * namespace or object name (unbounded, and the metrics port is open to every pod).
 */
export const EVENT_DROP_REASONS = [
  "rate-limited",
  "namespace-full",
  "queue-full",
  "displaced",
  "invalid",
  "api-error",
  "shutdown",
] as const;
export type EventDropReason = typeof EVENT_DROP_REASONS[number];

/** What each reason means in a log line, and what to do about it. */
const EXPLAIN: Record<EventDropReason, string> = {
  "rate-limited": "its object had its burst of Events (one more every refill period)",
  "namespace-full":
    "its namespace already had its share of Events waiting (a flood from that namespace; other namespaces' Events are still queued)",
  "queue-full":
    "the Event queue was full and its namespace already held as many waiting Events as any other (the API server is slow or unreachable, or many namespaces flood)",
  "displaced":
    "a namespace with fewer Events waiting took its place in the full queue (its own namespace had the most waiting)",
  "invalid": "a name in its object reference is longer than any Kubernetes name",
  "api-error":
    "the API server refused it or kept failing (check the agent's RBAC for events and the API server's health)",
  "shutdown": "the agent stopped before it was sent",
};

/** The level of each reason's lines. */
const LEVEL: Record<EventDropReason, "info" | "warning"> = {
  // The per-object spam filter is working as designed (the kubelet's recorder does the same).
  "rate-limited": "info",
  "namespace-full": "warning",
  "queue-full": "warning",
  "displaced": "warning",
  "invalid": "warning",
  "api-error": "warning",
  "shutdown": "info",
};

export interface EventDropsOptions {
  /** How often the drops after a reason's first are summed up in one line, in ms. */
  intervalMs: number;
  timers: Timers;
  /** Called for every drop (the metric). */
  onDrop?: (reason: EventDropReason, count: number) => void;
  logger?: Pick<Logger, "info" | "warning">;
}

/** Counts and logs the recorder's drops; see the module comment. */
export class EventDrops {
  /** Drops by reason since the start. */
  readonly counts = Object.fromEntries(EVENT_DROP_REASONS.map((r) => [r, 0])) as Record<
    EventDropReason,
    number
  >;
  readonly #options: EventDropsOptions;
  readonly #log: Pick<Logger, "info" | "warning">;
  readonly #windows: LogWindows;

  constructor(options: EventDropsOptions) {
    this.#options = options;
    this.#log = options.logger ?? getLogger(["lace", "events"]);
    this.#windows = new LogWindows({ intervalMs: options.intervalMs, timers: options.timers });
  }

  /**
   * Records `count` drops of `reason`; `what` names the last one ("AttachRefused on Pod
   * shop/web-1", or "12 queued Events" at shutdown).
   */
  drop(reason: EventDropReason, what: string, count = 1): void {
    this.counts[reason] += count;
    this.#options.onDrop?.(reason, count);
    const seconds = this.#options.intervalMs / 1000;
    const summarize = (more: number, last: string) =>
      this.#log[LEVEL[reason]](
        `Dropped {count} more Events in the last {seconds} s because ${
          EXPLAIN[reason]
        }; the last: {what}`,
        { count: more, seconds, what: last, reason },
      );
    if (!this.#windows.admit(reason, what, summarize, count)) return;
    // The explanations are this file's own text (no braces), so they are part of the template.
    this.#log[LEVEL[reason]](
      `Dropped Event {what}: ${
        EXPLAIN[reason]
      }; further drops for this reason are summed up every {seconds} s (lace_events_dropped_total{{reason={reason}}})`,
      { what, seconds, reason },
    );
  }

  /** Logs what the open windows hold and cancels their timers. */
  stop(): void {
    this.#windows.stop();
  }
}
