/**
 * The Kubernetes API as a pod source: list and watch the pods bound to this
 * node (`fieldSelector=spec.nodeName=<node>`) with client-node's ListWatch.
 *
 * client-node's own behaviour sets the shape of this file: its ListWatch
 * relists by itself after 410 Gone, but stops for good after any other error
 * (HTTP 500 on the watch, API unreachable, a failed list), so we restart it
 * with a capped, jittered exponential backoff and count the restarts. The sink
 * gets `replaceAll` only after a list succeeded, never an empty list because
 * of an error, so the probe map survives an unreachable API.
 *
 * Memory stays bounded whatever a tenant binds to the node (issue 24, finding
 * 2: a pod object may be 1.5 MB, and any tenant can bind pods to any node with
 * spec.nodeName). The source asks only for pods that have not finished
 * (`status.phase!=Succeeded,status.phase!=Failed`, which kube-apiserver
 * supports for pods beside spec.nodeName, and checks it again itself), lists
 * in pages, and trims every object to Lace's fields (normalisePod, with only
 * Lace's annotations) as it arrives, before client-node's informer caches it:
 * the informer holds the same frozen pod the sink gets, never the full
 * object. Each whole object is garbage once trimmed, and a HeapGate collects
 * it after every 16 MiB of growth, long before V8 would by itself. A pod
 * whose trimmed fields are still over `maxPodBytes` is kept by
 * its identity alone and refused (no targets, reported as `too-large`).
 *
 * Under Deno 2.9, a watch whose server went away may neither end nor fail
 * (undici's response body hangs after the connection closed, and aborting it
 * does not end it either), so client-node never calls the watch's done
 * callback. The source therefore notices a dead watch itself, three ways:
 * the KubeConfig's connection pool reports a watch connection that failed
 * (Http1KubeConfig.onWatchFailure: at once, the usual case of an API server
 * that stopped or restarted); a watch silent for `livenessMs` gets one cheap
 * GET /version, and a failed probe means the watch is dead; a watch still
 * open past the timeout the server was asked to end it at is dead. Each
 * abandons that watch and restarts from the last resourceVersion.
 */
import { CoreV1Api, type KubeConfig, ListWatch, VersionApi, Watch } from "../kube/k8s.ts";
import { getLogger } from "@logtape/logtape";
import { type Backoff, backoffDelay } from "../backoff.ts";
import { realTimers, sleep, type Timers, within } from "../timers.ts";
import { HeapGate } from "../heap_gate.ts";
import { hasFinished, MAX_POD_BYTES, normalisePod, type Pod, podRef } from "./pod.ts";
import type { PodSink, PodSource } from "./source.ts";

const log = getLogger(["lace", "api"]);

/**
 * Restart delays: "equal jitter" (between half and all of each delay) so that
 * the agents of many nodes do not hit a recovering API server at once.
 */
const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 30_000, jitter: 0.5 };

export interface ApiPodSourceOptions {
  kubeConfig: KubeConfig;
  nodeName: string;
  backoff?: Partial<Backoff>;
  /** Called on each restart after an error: feeds lace_watch_restarts_total. */
  onRestart?: (error: unknown) => void;
  /** A watch with no data (not even a BOOKMARK) for this long is reconnected, in ms. */
  inactivityMs?: number;
  /** The server ends each watch after a random time in [min, 2·min) seconds, as client-go asks. */
  watchTimeoutSeconds?: number;
  /** A watch silent this long gets its server probed (GET /version), in ms. */
  livenessMs?: number;
  /** How long the liveness probe may take before the API counts as unreachable, in ms. */
  probeTimeoutMs?: number;
  /**
   * How long the pod list may take before it counts as lost, in ms: under Deno a response whose
   * server died mid-answer never ends, and a lost list would stop the source for good.
   */
  listTimeoutMs?: number;
  /** How long past its server-side timeout a watch may stay open before it counts as dead, in ms. */
  deadlineGraceMs?: number;
  random?: () => number;
  /**
   * The only annotations kept of each pod (Lace's network annotations); every one when unset.
   */
  annotations?: readonly string[];
  /** The largest a pod's kept fields may be, in bytes of JSON (default MAX_POD_BYTES). */
  maxPodBytes?: number;
  /**
   * Pods per page of the list: a list holds a page of whole objects at a time, which at the
   * API server's largest pod (1.5 MB) is 7.5 MB of JSON at the default of 5 (a node of 110
   * pods lists in 22 requests). Listing 360 such pods peaked the agent at 241 MiB of RSS in
   * pages of 10 and 214 MiB in pages of 5, with a HeapGate of 32 MiB steps
   * (tests/agent_memory_test.ts).
   */
  pageSize?: number;
  /** Collects the whole objects' garbage (a HeapGate of 16 MiB steps by default). */
  heapGate?: HeapGate;
  /** Restart delays, liveness checks and deadlines; the process's own by default. */
  timers?: Timers;
}

type WatchDone = (error: unknown) => void;

/** What stands in the informer for an object that is no usable pod: only where it is. */
const SKELETONS = new WeakSet<object>();

/** The pods of `nodeName` that have not finished: the API server filters, not the agent. */
export function podFieldSelector(nodeName: string): string {
  return `spec.nodeName=${nodeName},status.phase!=Succeeded,status.phase!=Failed`;
}

/** What a KubeConfig may offer to report failed watch connections (Http1KubeConfig does). */
interface WatchFailures {
  onWatchFailure(listener: (error: unknown) => void): () => void;
}

/** The subset of Watch that ListWatch calls. */
interface Watcher {
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, object: unknown, watchObject?: unknown) => void,
    done: WatchDone,
  ): Promise<AbortController>;
}

/** Pods on this node from the Kubernetes API, delivered to a PodSink as source "api". */
export class ApiPodSource implements PodSource {
  readonly name = "api";
  #options: ApiPodSourceOptions;
  #backoff: Backoff;
  #timers: Timers;
  #sink?: PodSink;
  #listWatch?: ListWatch<never>;
  #stopped = false;
  #attempt = 0;
  #restartTimer?: unknown;
  #controllers = new Set<AbortController>();
  /** Aborted at stop: wakes client-node's relist delays. */
  #stopping = new AbortController();
  /** uid → resourceVersion of what the sink was last told, to skip repeats the informer emits. */
  #reported = new Map<string, string>();
  #restarts = 0;
  #lists = 0;
  /** Bumped for every new watch and when one is abandoned: older watches' callbacks are ignored. */
  #watchGeneration = 0;
  #lastActivity = 0;
  /** When the current watch should have been ended by the server; 0 when none is open. */
  #watchDeadline = 0;
  #livenessTimer?: unknown;
  #probing = false;
  #unsubscribeWatchFailures?: () => void;
  #heap: HeapGate;

  constructor(options: ApiPodSourceOptions) {
    this.#options = options;
    this.#backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.#timers = options.timers ?? realTimers;
    this.#heap = options.heapGate ?? new HeapGate();
  }

  /** Restarts after an error since start (lace_watch_restarts_total). */
  get restarts(): number {
    return this.#restarts;
  }

  /** The resourceVersion the watch would resume from ("" before the first list). */
  get resourceVersion(): string {
    return this.#listWatch?.latestResourceVersion() ?? "";
  }

  /** Complete lists delivered to the sink. */
  get lists(): number {
    return this.#lists;
  }

  start(sink: PodSink): Promise<void> {
    if (this.#listWatch) return Promise.resolve();
    this.#sink = sink;
    this.#stopped = false;
    this.#stopping = new AbortController();
    const { kubeConfig, nodeName } = this.#options;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const fieldSelector = podFieldSelector(nodeName);
    const watch = new Watch(kubeConfig);
    // A TS-private field: the inactivity timeout after which the watch reconnects (default 30 s).
    // Longer than the server-side watch timeout plus grace: under Deno its abort does not end a
    // hung stream, so the liveness check below, not this timer, is what notices a dead watch.
    (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs =
      this.#options.inactivityMs ?? 300_000;
    const listTimeoutMs = this.#options.listTimeoutMs ?? 60_000;
    const limit = this.#options.pageSize ?? 5;
    // Page by page, each trimmed before the next is asked for: the informer gets a list of
    // trimmed pods, and the pages' whole objects are garbage as soon as they are trimmed.
    const listFn = async () => {
      const items: unknown[] = [];
      let resourceVersion = "";
      let token: string | undefined;
      do {
        const page = await within(
          this.#timers,
          core.listPodForAllNamespaces({ fieldSelector, limit, _continue: token }),
          listTimeoutMs,
          "a page of the pod list",
        );
        for (const item of page.items) if (!hasFinished(item)) items.push(this.#trim(item));
        this.#heap.check();
        resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
        token = page.metadata?._continue || undefined;
      } while (token !== undefined && !this.#stopped);
      this.#deliverList(items);
      return { metadata: { resourceVersion }, items };
    };
    const lw = new ListWatch<never>(
      "/api/v1/pods",
      this.#guard(watch) as unknown as Watch,
      listFn as never,
      false,
      undefined,
      fieldSelector,
      {
        delayFn: (ms: number) =>
          sleep(this.#timers, Math.min(ms, this.#backoff.maxMs), this.#stopping.signal),
      },
    );
    lw.on("add", (object: unknown) => this.#upsert(object));
    lw.on("update", (object: unknown) => this.#upsert(object));
    lw.on("delete", (object: unknown) => this.#remove(object));
    lw.on("error", (error: unknown) => this.#failed(error));
    this.#listWatch = lw;
    log.info("Watching pods of node {node}", { node: nodeName });
    const version = kubeConfig.makeApiClient(VersionApi);
    const livenessMs = this.#options.livenessMs ?? 30_000;
    this.#lastActivity = this.#timers.now();
    this.#scheduleLiveness(version, livenessMs);
    this.#unsubscribeWatchFailures = (kubeConfig as Partial<WatchFailures>).onWatchFailure?.(
      (error) => this.#watchConnectionFailed(error),
    );
    this.#run();
    return Promise.resolve();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#unsubscribeWatchFailures?.();
    this.#unsubscribeWatchFailures = undefined;
    this.#timers.clearTimeout(this.#livenessTimer);
    this.#livenessTimer = undefined;
    this.#timers.clearTimeout(this.#restartTimer);
    this.#restartTimer = undefined;
    this.#stopping.abort();
    await this.#listWatch?.stop();
    for (const controller of this.#controllers) controller.abort();
    this.#controllers.clear();
    this.#listWatch = undefined;
    log.info("Stopped watching pods");
  }

  #run(): void {
    this.#listWatch?.start().catch((error) => this.#failed(error));
  }

  /** Checks liveness every `livenessMs` until stop (a check still probing skips its turn). */
  #scheduleLiveness(version: VersionApi, livenessMs: number): void {
    this.#livenessTimer = this.#timers.setTimeout(() => {
      if (this.#stopped) return;
      this.#scheduleLiveness(version, livenessMs);
      void this.#checkLiveness(version, livenessMs);
    }, livenessMs);
  }

  /**
   * Runs every `livenessMs`: a watch past its deadline is dead; a silent one
   * gets its server probed, and an unreachable server means the watch is dead
   * too. Either way the watch is abandoned and restarted with backoff.
   */
  async #checkLiveness(version: VersionApi, livenessMs: number): Promise<void> {
    if (this.#stopped || this.#restartTimer || this.#probing) return;
    const now = this.#timers.now();
    if (this.#watchDeadline && now > this.#watchDeadline) {
      this.#abandonWatch(
        "the watch stayed open past the timeout the API server was asked to end it at",
      );
      return;
    }
    if (now - this.#lastActivity < livenessMs) return;
    this.#probing = true;
    try {
      const timeoutMs = this.#options.probeTimeoutMs ?? 5_000;
      await within(this.#timers, version.getCode(), timeoutMs, "GET /version");
      this.#lastActivity = this.#timers.now();
    } catch (error) {
      if (!this.#stopped) {
        this.#abandonWatch(`the API server did not answer a liveness probe: ${describe(error)}`);
      }
    } finally {
      this.#probing = false;
    }
  }

  /** The pool saw an open watch's connection fail: that watch will never end by itself. */
  #watchConnectionFailed(error: unknown): void {
    // No watch open (a list or a restart delay in progress): nothing to abandon.
    if (this.#stopped || this.#restartTimer || !this.#watchDeadline) return;
    this.#abandonWatch(`the watch's connection failed: ${describe(error)}`);
  }

  /** Gives up on the current watch (its callbacks are ignored from now on) and restarts. */
  #abandonWatch(reason: string): void {
    this.#watchGeneration++;
    this.#watchDeadline = 0;
    for (const controller of this.#controllers) controller.abort();
    this.#controllers.clear();
    this.#failed(new Error(reason));
  }

  #failed(error: unknown): void {
    if (this.#stopped || this.#restartTimer) return;
    this.#attempt++;
    this.#restarts++;
    const delayMs = Math.round(
      backoffDelay(this.#attempt, this.#backoff, this.#options.random ?? Math.random),
    );
    log.warning("Pod watch failed, restarting in {delayMs} ms (attempt {attempt}): {error}", {
      delayMs,
      attempt: this.#attempt,
      error: describe(error),
    });
    try {
      this.#options.onRestart?.(error);
    } catch (callbackError) {
      log.error("Watch restart callback failed: {error}", { error: describe(callbackError) });
    }
    this.#restartTimer = this.#timers.setTimeout(() => {
      this.#restartTimer = undefined;
      if (!this.#stopped) this.#run();
    }, delayMs);
  }

  /** Wraps the Watch: asks for BOOKMARKs and server timeouts, and never connects after stop. */
  #guard(inner: Watch): Watcher {
    return {
      watch: async (path, query, callback, done) => {
        if (this.#stopped) return new AbortController();
        const min = this.#options.watchTimeoutSeconds ?? 120;
        const random = this.#options.random ?? Math.random;
        let finished = false;
        const generation = ++this.#watchGeneration;
        const current = () => generation === this.#watchGeneration && !this.#stopped;
        const timeoutSeconds = Math.floor(min * (1 + random()));
        this.#lastActivity = this.#timers.now();
        this.#watchDeadline = this.#timers.now() + timeoutSeconds * 1000 +
          (this.#options.deadlineGraceMs ?? 30_000);
        // done() may run before watch() returns (a refused connection), so hold it in a box.
        const box: { controller?: AbortController } = {};
        const controller = box.controller = await inner.watch(
          path,
          { ...query, allowWatchBookmarks: true, timeoutSeconds },
          (phase, object, watchObject) => {
            if (!current()) return;
            this.#lastActivity = this.#timers.now();
            if (phase !== "ERROR") this.#attempt = 0;
            if (phase === "ERROR") {
              log.info("Pod watch ended by the API server: {status}", { status: describe(object) });
            }
            if (phase === "ADDED" || phase === "MODIFIED" || phase === "DELETED") {
              // The informer caches what it is given: only ever the trimmed pod. A pod that
              // finished leaves it, as from an API server that applies the phase selector.
              const event = phase !== "DELETED" && hasFinished(object) ? "DELETED" : phase;
              callback(event, this.#trim(object), undefined);
              this.#heap.check();
              return;
            }
            (callback as (p: string, o: unknown, w: unknown) => void)(phase, object, watchObject);
          },
          (error) => {
            finished = true;
            if (box.controller) this.#controllers.delete(box.controller);
            if (!current()) return;
            this.#watchDeadline = 0;
            done(error);
          },
        );
        if (this.#stopped) controller.abort();
        else if (!finished) this.#controllers.add(controller);
        return controller;
      },
    };
  }

  /**
   * The object the informer keeps and the sink gets: the pod trimmed to Lace's fields (or its
   * identity alone when over the size cap), or for an object that is no usable pod a skeleton
   * of its name, namespace and resourceVersion, which the informer needs and the sink never gets.
   */
  #trim(object: unknown): unknown {
    try {
      return normalisePod(object, {
        annotations: this.#options.annotations,
        maxBytes: this.#options.maxPodBytes ?? MAX_POD_BYTES,
      });
    } catch (error) {
      log.warning("Ignoring a malformed pod from the API: {error}", { error: describe(error) });
      const meta = (object as { metadata?: Record<string, unknown> } | null)?.metadata;
      const skeleton: { metadata: Record<string, string> } = { metadata: {} };
      for (const field of ["name", "namespace", "uid", "resourceVersion"]) {
        const value = meta !== null && typeof meta === "object" ? meta[field] : undefined;
        if (typeof value === "string") skeleton.metadata[field] = value;
      }
      SKELETONS.add(skeleton);
      return skeleton;
    }
  }

  #pod(object: unknown): Pod | undefined {
    if (typeof object !== "object" || object === null || SKELETONS.has(object)) return undefined;
    return normalisePod(object);
  }

  #deliverList(items: unknown[]): void {
    if (this.#stopped) return;
    const pods = items.map((item) => this.#pod(item)).filter((p): p is Pod => !!p);
    this.#reported = new Map(pods.map((p) => [p.metadata.uid, p.metadata.resourceVersion ?? ""]));
    this.#attempt = 0;
    this.#lists++;
    log.info("Listed {count} pods of node {node}", {
      count: pods.length,
      node: this.#options.nodeName,
    });
    this.#sink?.replaceAll(this.name, pods);
  }

  #upsert(object: unknown): void {
    if (this.#stopped) return;
    const pod = this.#pod(object);
    if (!pod) return;
    const rv = pod.metadata.resourceVersion ?? "";
    if (rv !== "" && this.#reported.get(pod.metadata.uid) === rv) return;
    this.#reported.set(pod.metadata.uid, rv);
    log.debug("Pod {pod} changed", { pod: podRef(pod) });
    this.#sink?.upsert(this.name, pod);
  }

  #remove(object: unknown): void {
    if (this.#stopped) return;
    const uid = (object as { metadata?: { uid?: string } })?.metadata?.uid;
    if (!uid || !this.#reported.has(uid)) return;
    this.#reported.delete(uid);
    log.debug("Pod {uid} deleted", { uid });
    this.#sink?.remove(this.name, uid);
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { statusCode?: number; code?: number }).statusCode ??
      (error as { code?: unknown }).code;
    return code !== undefined ? `${error.message} (${code})` : error.message;
  }
  if (error && typeof error === "object" && "message" in error) {
    return String((error as { message: unknown }).message);
  }
  return String(error);
}
