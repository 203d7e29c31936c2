/**
 * Kubernetes Events (core/v1) from the agent, shaped after client-go's
 * recorder: a token bucket per involved object stops one broken pod from
 * flooding the API (burst 25, one more every 5 minutes), and identical Events
 * (same object, type, reason and message) become one Event whose count and
 * lastTimestamp are patched. `warn`/`normal` only enqueue into a bounded queue
 * that one worker drains, so reconcile never waits for the API; drops and
 * failures are counted and logged, never thrown.
 */
import { V1MicroTime } from "./k8s.ts";
import { getLogger } from "@logtape/logtape";
import { backoffDelay } from "../backoff.ts";
import { realTimers, sleep, type Timers, within } from "../timers.ts";
import type { EventSink, ObjectRef } from "./event_sink.ts";
import { errorText } from "../error_text.ts";
import { escapeUnsafe } from "../safe_text.ts";
import { TokenBuckets, touch } from "../token_buckets.ts";
import { apiStatus } from "./api_error.ts";

const log = getLogger(["lace", "events"]);

/** The two calls of CoreV1Api the recorder makes (CoreV1Api satisfies it). */
export interface EventApi {
  createNamespacedEvent(param: { namespace: string; body: never }): Promise<unknown>;
  patchNamespacedEvent(
    param: { namespace: string; name: string; body: unknown },
  ): Promise<unknown>;
}

export interface EventRecorderOptions {
  api: EventApi;
  /** source.host and reportingInstance. */
  nodeName: string;
  /** source.component; default "lace". */
  component?: string;
  /** reportingComponent; default "lace.io/agent". */
  reportingComponent?: string;
  /** The action field Events with eventTime require; default "Reconcile". */
  action?: string;
  /** Events waiting to be sent before new ones are dropped; default 1000. */
  queueSize?: number;
  /** Events one object may emit at once; default 25. */
  burst?: number;
  /** Time to earn one more Event per object, in ms; default 5 minutes. */
  refillMs?: number;
  /** Distinct Events remembered for aggregation (and objects for rate limits); default 4096. */
  cacheSize?: number;
  /** Attempts after a server or network failure; default 3. */
  retries?: number;
  /** First retry delay, doubling, in ms; default 1000. */
  retryDelayMs?: number;
  /**
   * How long one request may take before it counts as failed (and is retried), in ms; default
   * 30 000. Under Deno a response whose server died mid-answer never ends: without a limit
   * one such request would stop every Event after it.
   */
  requestTimeoutMs?: number;
  /** The wall clock Events are stamped with and rate limits count on; default Date.now. */
  now?: () => number;
  /** Timers for the retry delays; the process's own by default. */
  timers?: Timers;
}

export interface EventStats {
  /** Events created. */
  created: number;
  /** Repeats folded into an existing Event by a patch. */
  aggregated: number;
  /** Dropped because the object exceeded its rate. */
  rateLimited: number;
  /** Dropped because the queue was full. */
  dropped: number;
  /** Given up after errors. */
  failed: number;
}

interface Pending {
  type: "Normal" | "Warning";
  object: ObjectRef;
  reason: string;
  message: string;
  time: number;
}

interface Aggregate {
  name: string;
  namespace: string;
  count: number;
  first: number;
}

/** Records Events through the API; see the module comment. */
export class EventRecorder implements EventSink {
  readonly stats: EventStats = { created: 0, aggregated: 0, rateLimited: 0, dropped: 0, failed: 0 };
  #options: Required<Omit<EventRecorderOptions, "api">> & { api: EventApi };
  #queue: Pending[] = [];
  #buckets: TokenBuckets;
  #aggregates = new Map<string, Aggregate>();
  #working?: Promise<void>;
  #stopped = false;
  #sequence = 0;
  /** Aborted at stop: ends a retry delay at once. */
  readonly #stopping = new AbortController();

  constructor(options: EventRecorderOptions) {
    this.#options = {
      component: "lace",
      reportingComponent: "lace.io/agent",
      action: "Reconcile",
      queueSize: 1000,
      burst: 25,
      refillMs: 5 * 60_000,
      cacheSize: 4096,
      retries: 3,
      retryDelayMs: 1000,
      requestTimeoutMs: 30_000,
      now: Date.now,
      timers: realTimers,
      ...options,
    };
    const { burst, refillMs, cacheSize } = this.#options;
    this.#buckets = new TokenBuckets({ burst, refillMs, maxKeys: cacheSize });
  }

  warn(object: ObjectRef, reason: string, message: string): void {
    this.#record("Warning", object, reason, message);
  }

  normal(object: ObjectRef, reason: string, message: string): void {
    this.#record("Normal", object, reason, message);
  }

  /** Resolves once every queued Event has been sent or given up. */
  async flush(): Promise<void> {
    while (this.#working) await this.#working;
  }

  /** Drops what is queued, cancels retries and waits for the request in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const left = this.#queue.length;
    this.#queue = [];
    if (left > 0) log.info("Dropped {count} queued Events at shutdown", { count: left });
    this.#stopping.abort();
    await this.#working;
  }

  #record(type: Pending["type"], object: ObjectRef, reason: string, message: string): void {
    if (this.#stopped) return;
    const now = this.#options.now();
    if (!this.#allow(object, now)) {
      this.stats.rateLimited++;
      log.debug("Event {reason} on {kind} {name} rate limited", {
        reason,
        kind: object.kind,
        name: object.name,
      });
      return;
    }
    if (this.#queue.length >= this.#options.queueSize) {
      this.stats.dropped++;
      log.warning("Event queue full ({size}): dropped {reason} on {kind} {name}", {
        size: this.#options.queueSize,
        reason,
        kind: object.kind,
        name: object.name,
      });
      return;
    }
    // Messages name what pod authors wrote (paths, networks, hosts), and `kubectl describe`
    // prints them on an operator's terminal: their controls are escaped (safe_text.ts).
    this.#queue.push({ type, object, reason, message: escapeUnsafe(message), time: now });
    this.#working ??= this.#drain().finally(() => this.#working = undefined);
  }

  /** Token bucket per object: `burst` tokens, one more every `refillMs`. */
  #allow(object: ObjectRef, now: number): boolean {
    const key = `${object.kind}/${object.namespace ?? ""}/${object.name}/${object.uid ?? ""}`;
    return this.#buckets.take(key, now) === 0;
  }

  async #drain(): Promise<void> {
    while (!this.#stopped && this.#queue.length > 0) {
      const event = this.#queue.shift()!;
      try {
        await this.#send(event);
      } catch (error) {
        this.stats.failed++;
        log.warning("Could not record Event {reason} on {kind} {name}: {error}", {
          reason: event.reason,
          kind: event.object.kind,
          name: event.object.name,
          error: errorText(error),
        });
      }
    }
  }

  async #send(event: Pending): Promise<void> {
    const { object } = event;
    const key = [
      event.type,
      object.kind,
      object.namespace,
      object.name,
      object.uid,
      event.reason,
      event.message,
    ]
      .join("\u0000");
    const known = this.#aggregates.get(key);
    if (known) {
      known.count++;
      touch(this.#aggregates, key, known, this.#options.cacheSize);
      try {
        await this.#retrying(() =>
          this.#options.api.patchNamespacedEvent({
            namespace: known.namespace,
            name: known.name,
            body: [
              { op: "add", path: "/count", value: known.count },
              { op: "add", path: "/lastTimestamp", value: new Date(event.time).toISOString() },
            ],
          })
        );
        this.stats.aggregated++;
        return;
      } catch (error) {
        // The Event expired (TTL) or was deleted: start a new one, as client-go does.
        if (apiStatus(error) !== 404) throw error;
        this.#aggregates.delete(key);
      }
    }
    const aggregate = await this.#create(event, known?.count ?? 1, known?.first ?? event.time);
    touch(this.#aggregates, key, aggregate, this.#options.cacheSize);
  }

  async #create(event: Pending, count: number, first: number): Promise<Aggregate> {
    const { object } = event;
    const namespace = object.namespace || "default";
    const suffix = (BigInt(event.time) * 1_000_000n + BigInt(this.#sequence++ % 1_000_000))
      .toString(16);
    const name = `${object.name.slice(0, 253 - suffix.length - 1)}.${suffix}`;
    const involvedObject: Record<string, string> = {
      kind: object.kind,
      apiVersion: object.apiVersion,
      name: object.name,
    };
    if (object.namespace) involvedObject.namespace = object.namespace;
    if (object.uid) involvedObject.uid = object.uid;
    const body = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name, namespace },
      involvedObject,
      reason: event.reason.slice(0, 128),
      message: event.message.slice(0, 1024),
      type: event.type,
      count,
      firstTimestamp: new Date(first),
      lastTimestamp: new Date(event.time),
      // A plain Date would serialise with 3 fractional digits, which the API server rejects.
      eventTime: new V1MicroTime(event.time),
      action: this.#options.action,
      source: { component: this.#options.component, host: this.#options.nodeName },
      reportingComponent: this.#options.reportingComponent,
      reportingInstance: this.#options.nodeName,
    };
    await this.#retrying(() =>
      this.#options.api.createNamespacedEvent({ namespace, body: body as never })
    );
    this.stats.created++;
    log.debug("Recorded Event {reason} on {kind} {name}", {
      reason: event.reason,
      kind: object.kind,
      name: object.name,
    });
    return { name, namespace, count, first };
  }

  /** Retries server and network failures with a doubling delay; a 4xx is final. */
  async #retrying<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 0;; attempt++) {
      try {
        return await within(
          this.#options.timers,
          call(),
          this.#options.requestTimeoutMs,
          "the Event request",
        );
      } catch (error) {
        const status = apiStatus(error);
        const final = (status !== undefined && status >= 400 && status < 500 && status !== 429) ||
          attempt >= this.#options.retries || this.#stopped;
        if (final) throw error;
        const delayMs = backoffDelay(attempt + 1, {
          initialMs: this.#options.retryDelayMs,
          maxMs: Infinity,
        });
        await sleep(this.#options.timers, delayMs, this.#stopping.signal);
        // Stopping cancels retries, as documented: no call after the delay was cut short.
        if (this.#stopped) throw error;
      }
    }
  }
}
