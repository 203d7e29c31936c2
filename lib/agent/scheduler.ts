/**
 * A small generic scheduler for "make it so" work, after kube-network-policies'
 * BoundedFrequencyRunner: callers only ask for a run; the scheduler decides
 * when. Runs start at least `minIntervalMs` apart: a request that comes when
 * the last run started that long ago runs at once, on a 0 ms timer (what has
 * already arrived, a source's burst of events, is still one run; a microtask
 * ran one per watch event, and a burst of n pods cost n full computations:
 * 1.3 s for 250), and a request within the interval waits for its end,
 * gathering every other request into one run. The first
 * run (start) waits the whole interval, gathering the sources' first lists. A
 * run happens at least every `maxIntervalMs` (the resync that repairs drift);
 * a failed run is retried with backoff; runs never overlap. Time comes from a
 * `Timers`, so it is tested on fake time.
 */
import { type Backoff, backoffDelay } from "../time/backoff.ts";
import { realTimers, type Timers } from "../time/timers.ts";

export interface SchedulerOptions<R> {
  /** One run of the work; `reason` names what asked for it (comma-joined when gathered). */
  run: (reason: string) => Promise<R>;
  /** Whether a run's result asks for a retry. */
  failed: (result: R) => boolean;
  /** The shortest time between two runs' starts; requests within it are gathered into one run. */
  minIntervalMs: number;
  /** The longest time between runs: a run starts this long after the last one ended. */
  maxIntervalMs: number;
  /** Retry delays after consecutive failures; default 500 ms doubling to 30 s. */
  backoff?: Backoff;
  timers?: Timers;
  /** Told before each retry is scheduled (for logs). */
  onRetry?: (delayMs: number, attempt: number) => void;
}

const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 30_000 };

/** Runs the work as the module comment describes. */
export class Scheduler<R> {
  readonly #opts: SchedulerOptions<R>;
  readonly #timers: Timers;
  #gather: unknown = undefined;
  #resync: unknown = undefined;
  #retry: unknown = undefined;
  #running: Promise<void> | undefined;
  /** A request that arrived during a run, to be scheduled after it. */
  #again: string | undefined;
  #reasons = new Set<string>();
  #failures = 0;
  #stopped = true;
  /** When the last run started (timers.now()); undefined before the first. */
  #lastStart: number | undefined;
  /** runNow() callers the launching run answers. */
  #waiters: PromiseWithResolvers<R>[] = [];
  /** runNow() callers that came during a run and need the next one. */
  #nextWaiters: PromiseWithResolvers<R>[] = [];

  constructor(opts: SchedulerOptions<R>) {
    this.#opts = opts;
    this.#timers = opts.timers ?? realTimers;
  }

  /** Starts with one run after the minimum interval, then the periodic one. */
  start(): void {
    this.#stopped = false;
    this.trigger("start");
  }

  /**
   * Asks for a run: at once when the last run started at least the minimum
   * interval ago, else at the interval's end; requests until then become one run.
   */
  trigger(reason = "event"): void {
    if (this.#stopped) return;
    this.#reasons.add(reason);
    if (this.#running) {
      this.#again ??= reason;
      return;
    }
    if (this.#gather !== undefined) return;
    const { minIntervalMs } = this.#opts;
    const wait = this.#lastStart === undefined
      ? minIntervalMs
      : Math.max(0, this.#lastStart + minIntervalMs - this.#timers.now());
    this.#gather = this.#timers.setTimeout(() => {
      this.#gather = undefined;
      this.#launch();
    }, wait);
  }

  /**
   * Runs as soon as possible (right away, or right after the current run) and
   * resolves with the result of a run that started after this call, so it
   * includes everything known now. Rejects when the scheduler stops first.
   */
  runNow(reason = "now"): Promise<R> {
    const waiter = Promise.withResolvers<R>();
    this.#reasons.add(reason);
    if (this.#running) {
      this.#nextWaiters.push(waiter);
      this.#again = reason;
    } else {
      this.#waiters.push(waiter);
      this.#launch();
    }
    return waiter.promise;
  }

  /** Stops scheduling and waits for a running run to end. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const id of [this.#gather, this.#resync, this.#retry]) {
      if (id !== undefined) this.#timers.clearTimeout(id);
    }
    this.#gather = this.#resync = this.#retry = undefined;
    await this.#running;
  }

  /** Resolves once no run is running (a requested one may still be scheduled). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  #launch(): void {
    for (const id of [this.#gather, this.#retry]) {
      if (id !== undefined) this.#timers.clearTimeout(id);
    }
    this.#gather = this.#retry = undefined;
    this.#lastStart = this.#timers.now();
    const reason = [...this.#reasons].join(",") || "resync";
    this.#reasons.clear();
    const waiters = this.#waiters;
    this.#waiters = [];
    this.#running = this.#opts.run(reason).then((result) => {
      for (const w of waiters) w.resolve(result);
      this.#running = undefined;
      this.#after(this.#opts.failed(result));
    }, (error) => {
      // The run function is expected to report failures in its result; a throw
      // still must not wedge the scheduler, so it counts as a failed run.
      for (const w of waiters) w.reject(error);
      this.#running = undefined;
      this.#after(true);
    });
  }

  #after(failed: boolean): void {
    this.#failures = failed ? this.#failures + 1 : 0;
    if (this.#stopped && this.#nextWaiters.length) {
      for (const w of this.#nextWaiters) w.reject(new Error("Stopped before the requested run"));
      this.#nextWaiters = [];
    }
    if (this.#nextWaiters.length) {
      this.#waiters.push(...this.#nextWaiters);
      this.#nextWaiters = [];
      this.#again = undefined;
      this.#launch();
      return;
    }
    if (this.#stopped) return;
    if (this.#again !== undefined) {
      const again = this.#again;
      this.#again = undefined;
      this.trigger(again);
    } else if (failed) {
      const delay = backoffDelay(this.#failures, this.#opts.backoff ?? DEFAULT_BACKOFF);
      this.#opts.onRetry?.(delay, this.#failures + 1);
      this.#retry = this.#timers.setTimeout(() => {
        this.#retry = undefined;
        this.#reasons.add("retry");
        this.#launch();
      }, delay);
    }
    if (this.#resync !== undefined) this.#timers.clearTimeout(this.#resync);
    this.#resync = this.#timers.setTimeout(() => {
      this.#resync = undefined;
      if (this.#running) this.#again ??= "resync";
      else {
        this.#reasons.add("resync");
        this.#launch();
      }
    }, this.#opts.maxIntervalMs);
  }
}
