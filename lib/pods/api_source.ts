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
 * Memory stays bounded whatever a tenant binds to the node: the source asks
 * only for pods that have not finished (`status.phase!=Succeeded,status.phase!=Failed`,
 * which kube-apiserver supports for pods beside spec.nodeName, and checks it again
 * itself), and trims every object before client-node's informer caches it (api_trim.ts).
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
import { type Backoff, backoffDelay } from "../time/backoff.ts";
import { realTimers, sleep, type Timers, within } from "../time/timers.ts";
import { HeapGate } from "../os/heap_gate.ts";
import { apiErrorText } from "../kube/api_error.ts";
import { hasFinished, type Pod, podRef } from "./pod.ts";
import { listTrimmedPods, type PodMemoryOptions, PodTrimmer } from "./api_trim.ts";
import type { PodSink, PodSource } from "./source.ts";

const log = getLogger(["lace", "api"]);

/**
 * Restart delays: "equal jitter" (between half and all of each delay) so that
 * the agents of many nodes do not hit a recovering API server at once.
 */
const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 30_000, jitter: 0.5 };

export interface ApiPodSourceOptions extends PodMemoryOptions {
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
  /** Restart delays, liveness checks and deadlines; the process's own by default. */
  timers?: Timers;
}

type WatchDone = (error: unknown) => void;

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
  #trimmer: PodTrimmer;

  constructor(options: ApiPodSourceOptions) {
    this.#options = options;
    this.#backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.#timers = options.timers ?? realTimers;
    this.#heap = options.heapGate ?? new HeapGate();
    this.#trimmer = new PodTrimmer(options);
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
    const listFn = async () => {
      const list = await listTrimmedPods(
        (token) =>
          within(
            this.#timers,
            core.listPodForAllNamespaces({ fieldSelector, limit, _continue: token }),
            listTimeoutMs,
            "a page of the pod list",
          ),
        this.#trimmer,
        this.#heap,
        () => this.#stopped,
      );
      this.#deliverList(list.items);
      return { metadata: { resourceVersion: list.resourceVersion }, items: list.items };
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
        this.#abandonWatch(
          `the API server did not answer a liveness probe: ${apiErrorText(error)}`,
        );
      }
    } finally {
      this.#probing = false;
    }
  }

  /** The pool saw an open watch's connection fail: that watch will never end by itself. */
  #watchConnectionFailed(error: unknown): void {
    // No watch open (a list or a restart delay in progress): nothing to abandon.
    if (this.#stopped || this.#restartTimer || !this.#watchDeadline) return;
    this.#abandonWatch(`the watch's connection failed: ${apiErrorText(error)}`);
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
      error: apiErrorText(error),
    });
    try {
      this.#options.onRestart?.(error);
    } catch (callbackError) {
      log.error("Watch restart callback failed: {error}", { error: apiErrorText(callbackError) });
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
              log.info("Pod watch ended by the API server: {status}", {
                status: apiErrorText(object),
              });
            }
            if (phase === "ADDED" || phase === "MODIFIED" || phase === "DELETED") {
              // The informer caches what it is given: only ever the trimmed pod. A pod that
              // finished leaves it, as from an API server that applies the phase selector.
              const event = phase !== "DELETED" && hasFinished(object) ? "DELETED" : phase;
              callback(event, this.#trimmer.trim(object), undefined);
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

  #deliverList(items: unknown[]): void {
    if (this.#stopped) return;
    const pods = items.map((item) => this.#trimmer.pod(item)).filter((p): p is Pod => !!p);
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
    const pod = this.#trimmer.pod(object);
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
