/**
 * Kubernetes Events (core/v1) from the agent, shaped after client-go's
 * recorder: a token bucket per involved object stops one broken pod from
 * flooding the API (burst 25, one more every 5 minutes), and identical Events
 * (same object, type, reason and message) become one Event whose count and
 * lastTimestamp are patched. `warn`/`normal` only enqueue, so reconcile never
 * waits for the API; one worker drains the queue.
 *
 * The queue is fair across the namespaces the Events are about (fair_queue.ts): a sub-queue per
 * namespace (at most 100 waiting), served round robin, 1000 waiting in all; when it is full, a
 * namespace with fewer waiting takes the place of the newest Event of the namespace with the most.
 * So a tenant whose pods make thousands of Events (malformed annotations, refused CNI ADDs)
 * delays and loses only its own, and another namespace's Event (the AttachRefused that tells its
 * operator their pod was not attached) still goes out within one round of the waiting namespaces.
 * An Event identical to one still waiting raises that one's count instead of queueing again.
 * A waiting Event holds at most about 8 KiB (its message cut to 1024 characters, and a name
 * longer than any Kubernetes name refused), so the queue holds at most about 8 MiB.
 * Drops and failures are counted by reason and logged without flooding the log
 * (event_drops.ts), never thrown.
 */
import { V1MicroTime } from "./k8s.ts";
import { getLogger } from "@logtape/logtape";
import { backoffDelay } from "../time/backoff.ts";
import { realTimers, sleep, type Timers, within } from "../time/timers.ts";
import type { EventSink, ObjectRef } from "./event_sink.ts";
import { errorText } from "../text/error.ts";
import { escapeUnsafe } from "../text/safe.ts";
import { TokenBuckets, touch } from "../time/token_buckets.ts";
import { FairQueue } from "./fair_queue.ts";
import { apiStatus } from "./api_error.ts";
import { type EventDropReason, EventDrops } from "./event_drops.ts";

const log = getLogger(["lace", "events"]);

/** The longest name, namespace, kind or uid an object reference may have (a DNS subdomain). */
const MAX_REF_LENGTH = 253;

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
  /** Events waiting to be sent, in all namespaces together; default 1000. */
  queueSize?: number;
  /** Events about one namespace's objects waiting to be sent; default 100. */
  namespaceQueueSize?: number;
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
  /** Timers for the retry delays and the drop log; the process's own by default. */
  timers?: Timers;
  /** How often repeated drops of one reason are summed up in one log line, in ms; default 60 000. */
  dropLogIntervalMs?: number;
  /** Called for every Event dropped (the metric); reasons are in event_drops.ts. */
  onDrop?: (reason: EventDropReason, count: number) => void;
}

export interface EventStats {
  /** Events created. */
  created: number;
  /** Patches that raised the count of an Event already created. */
  aggregated: number;
  /** Repeats that raised the count of an Event still waiting in the queue. */
  coalesced: number;
  /** Events not written, by reason. */
  dropped: Readonly<Record<EventDropReason, number>>;
}

interface Pending {
  /** Type, object, reason and message: what makes two Events the same one. */
  key: string;
  type: "Normal" | "Warning";
  object: ObjectRef;
  reason: string;
  message: string;
  /** Occurrences this waiting Event stands for (repeats coalesced into it). */
  count: number;
  first: number;
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
  readonly stats: EventStats;
  #options:
    & Required<Omit<EventRecorderOptions, "api" | "onDrop">>
    & Pick<EventRecorderOptions, "api" | "onDrop">;
  #queue: FairQueue<Pending>;
  #drops: EventDrops;
  #buckets: TokenBuckets;
  #aggregates = new Map<string, Aggregate>();
  #working?: Promise<void>;
  #stopped = false;
  #sequence = 0;
  /** Aborted at stop: ends a retry delay at once. */
  readonly #stopping = new AbortController();
  /** Rejects at stop: a request in flight is not waited for (its answer would be ignored). */
  readonly #stopped$ = new Promise<never>((_, reject) =>
    this.#stopping.signal.addEventListener(
      "abort",
      () => reject(new Error("the Event recorder stopped")),
    )
  );

  constructor(options: EventRecorderOptions) {
    this.#stopped$.catch(() => {});
    this.#options = {
      component: "lace",
      reportingComponent: "lace.io/agent",
      action: "Reconcile",
      queueSize: 1000,
      namespaceQueueSize: 100,
      burst: 25,
      refillMs: 5 * 60_000,
      cacheSize: 4096,
      retries: 3,
      retryDelayMs: 1000,
      requestTimeoutMs: 30_000,
      now: Date.now,
      timers: realTimers,
      dropLogIntervalMs: 60_000,
      ...options,
    };
    const { burst, refillMs, cacheSize, queueSize, namespaceQueueSize } = this.#options;
    this.#buckets = new TokenBuckets({ burst, refillMs, maxKeys: cacheSize });
    this.#queue = new FairQueue({ capacity: queueSize, laneCapacity: namespaceQueueSize });
    this.#drops = new EventDrops({
      intervalMs: this.#options.dropLogIntervalMs,
      timers: this.#options.timers,
      onDrop: this.#options.onDrop,
    });
    this.stats = { created: 0, aggregated: 0, coalesced: 0, dropped: this.#drops.counts };
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

  /** Events waiting to be sent. */
  get queued(): number {
    return this.#queue.size;
  }

  /** Drops what is queued, cancels retries and gives up the request in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const left = this.#queue.clear();
    if (left > 0) this.#drops.drop("shutdown", `${left} queued Events`, left);
    this.#stopping.abort();
    await this.#working;
    this.#drops.stop();
  }

  #record(type: Pending["type"], object: ObjectRef, reason: string, message: string): void {
    if (this.#stopped) return;
    const now = this.#options.now();
    if (!validRef(object)) {
      this.#drops.drop("invalid", `${reason} on ${object.kind.slice(0, MAX_REF_LENGTH)}`);
      return;
    }
    // Messages name what pod authors wrote (paths, networks, hosts), and `kubectl describe`
    // prints them on an operator's terminal: their controls are escaped (text/safe.ts).
    // A copy: V8's slice of a long string keeps all of it, so a waiting Event would hold the
    // whole escaped message, not the 1024 characters it sends.
    const text: string = JSON.parse(JSON.stringify(escapeUnsafe(message).slice(0, 1024)));
    reason = reason.slice(0, 128);
    const key = [type, object.kind, object.namespace, object.name, object.uid, reason, text]
      .join("\u0000");
    const waiting = this.#queue.waiting(key);
    if (waiting) {
      // Costs no request and no memory, so it takes no token of the object's rate either.
      waiting.count++;
      waiting.time = now;
      this.stats.coalesced++;
      return;
    }
    if (!this.#allow(object, now)) {
      this.#drops.drop("rate-limited", describe(reason, object));
      return;
    }
    const event = { key, type, object, reason, message: text, count: 1, first: now, time: now };
    const { outcome, displaced } = this.#queue.push(object.namespace ?? "", key, event);
    if (outcome !== "queued") {
      this.#drops.drop(
        outcome === "lane-full" ? "namespace-full" : "queue-full",
        describe(reason, object),
      );
      return;
    }
    if (displaced) this.#drops.drop("displaced", describe(displaced.reason, displaced.object));
    this.#working ??= this.#drain().finally(() => this.#working = undefined);
  }

  /** Token bucket per object: `burst` tokens, one more every `refillMs`. */
  #allow(object: ObjectRef, now: number): boolean {
    const key = `${object.kind}/${object.namespace ?? ""}/${object.name}/${object.uid ?? ""}`;
    return this.#buckets.take(key, now) === 0;
  }

  async #drain(): Promise<void> {
    for (let event; !this.#stopped && (event = this.#queue.shift());) {
      try {
        await this.#send(event);
      } catch (error) {
        this.#drops.drop(
          // A retry that stopping cut short.
          this.#stopped ? "shutdown" : "api-error",
          `${describe(event.reason, event.object)} (${errorText(error)})`,
        );
      }
    }
  }

  async #send(event: Pending): Promise<void> {
    const { key } = event;
    const known = this.#aggregates.get(key);
    if (known) {
      known.count += event.count;
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
    const aggregate = await this.#create(
      event,
      known?.count ?? event.count,
      known?.first ?? event.first,
    );
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
      reason: event.reason,
      message: event.message,
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
    let attempts = 0;
    try {
      await this.#retrying(() => {
        attempts++;
        return this.#options.api.createNamespacedEvent({ namespace, body: body as never });
      });
    } catch (error) {
      // The name is this recorder's own (its time and sequence): a retry that finds it taken
      // finds the Event an earlier attempt created after its answer was given up on.
      if (!(attempts > 1 && apiStatus(error) === 409)) throw error;
    }
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
          Promise.race([call(), this.#stopped$]),
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

/** "AttachRefused on Pod shop/web-1": an Event in a log line. */
function describe(reason: string, object: ObjectRef): string {
  const where = object.namespace ? `${object.namespace}/` : "";
  return `${reason} on ${object.kind} ${where}${object.name}`;
}

/** Whether every field of `object` fits a Kubernetes name (what keeps a waiting Event small). */
function validRef(object: ObjectRef): boolean {
  return [object.kind, object.apiVersion, object.name, object.namespace ?? "", object.uid ?? ""]
    .every((field) => field.length <= MAX_REF_LENGTH);
}
