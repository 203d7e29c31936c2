/**
 * Whether the agent's own DaemonSet is being removed (`helm uninstall`,
 * `kubectl delete`), which is what tells an uninstall from a restart or an
 * upgrade. A watch on that one DaemonSet sees its deletion as it happens: the
 * DaemonSet goes before its pods get SIGTERM, and before helm removes the
 * Role that lets the agent read it, so a question asked only at SIGTERM
 * could be refused. At SIGTERM a last GET settles what the watch missed.
 *
 * The DaemonSet is followed by uid, not only by name: a deletion counts for
 * the one deleted, and a DaemonSet of the same name with another uid created
 * after it (`kubectl delete --cascade=orphan` then a new one, `kubectl
 * replace --force`, `helm upgrade --force`, a GitOps Replace) cancels it: Lace
 * is installed again, and the new DaemonSet adopts this agent's pod (same
 * name, the chart's selector) or replaces it. So the answer is what the API
 * last said of that name: gone or being deleted means uninstalling, standing
 * means not, whatever was seen before. The agent's pod's ownerReferences add
 * nothing to it: an orphaned pod names no owner, an adopted one the new uid.
 * The watch starts from a list (none means gone) and resumes from the last
 * resourceVersion it saw, listing again when the server says it is too old.
 */
import { getLogger } from "@logtape/logtape";
import { realTimers, type Timers, within } from "../time/timers.ts";
import { apiStatus } from "./api_error.ts";

const log = getLogger(["lace", "kube"]);

type WatchCallback = (phase: string, object: unknown) => void;

/** A DaemonSet as far as it is read here. */
export interface DaemonSetObject {
  metadata?: { uid?: string; resourceVersion?: string; deletionTimestamp?: unknown };
}

export interface OwnDaemonSetOptions {
  namespace: string;
  name: string;
  /** listNamespacedDaemonSet with `fieldSelector` (the one name). */
  list(fieldSelector: string): Promise<{
    metadata?: { resourceVersion?: string };
    items?: DaemonSetObject[];
  }>;
  /** client-node's Watch#watch, bound. */
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    callback: WatchCallback,
    done: (error: unknown) => void,
  ): Promise<AbortController>;
  /** readNamespacedDaemonSet for this DaemonSet. */
  get(): Promise<DaemonSetObject>;
  timers?: Timers;
  /** Delay before a watch that ended is opened again; default 1 s. */
  retryMs?: number;
  /**
   * How long the GET at the end may take before the watch's last word answers;
   * default 5 s, well inside the chart's termination grace period.
   */
  getTimeoutMs?: number;
}

/** What the API last said of the DaemonSet's name. */
type Seen =
  | { state: "standing" | "deleting"; uid: string | undefined }
  | { state: "gone"; uid: string | undefined };

function marked(object: DaemonSetObject | undefined): boolean {
  const at = object?.metadata?.deletionTimestamp;
  return at !== undefined && at !== null;
}

/** See the module comment. */
export class OwnDaemonSet {
  readonly #o: OwnDaemonSetOptions;
  readonly #timers: Timers;
  #seen: Seen | undefined;
  /** Where the watch resumes; undefined: list first. */
  #resourceVersion: string | undefined;
  #stopped = true;
  #controller: AbortController | null = null;
  #retry: unknown = null;

  constructor(options: OwnDaemonSetOptions) {
    this.#o = options;
    this.#timers = options.timers ?? realTimers;
  }

  /** True while the API's last word on the DaemonSet is its deletion (or that it is gone). */
  get deleting(): boolean {
    return this.#seen !== undefined && this.#seen.state !== "standing";
  }

  /** The uid of the DaemonSet followed now; undefined before the first answer or when gone. */
  get uid(): string | undefined {
    return this.#seen?.state === "gone" ? undefined : this.#seen?.uid;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    void this.#open();
  }

  /** Takes what the API says of the name: an object standing or being deleted, or none. */
  #observe(object: DaemonSetObject | undefined, deleted = false): void {
    const { name } = this.#o;
    const uid = object?.metadata?.uid;
    const before = this.#seen;
    if (deleted && before?.uid !== undefined && uid !== undefined && uid !== before.uid) {
      // The deletion of one no longer followed (a newer one of the name was seen first).
      log.debug("DaemonSet {name} uid {uid} deleted; following uid {followed}", {
        name,
        uid,
        followed: before.uid,
      });
      return;
    }
    const state = object === undefined || deleted
      ? "gone"
      : marked(object)
      ? "deleting"
      : "standing";
    this.#seen = { state, uid: uid ?? before?.uid };
    if (before === undefined) {
      if (state !== "standing") {
        log.info("DaemonSet {name} is {state}: the agent restores the CNI chain when it stops", {
          name,
          state: state === "gone" ? "not there" : "being deleted",
        });
      }
      return;
    }
    if (state !== "standing" && before.state === "standing") {
      log.info("DaemonSet {name} is being deleted (uid {uid})", { name, uid: uid ?? "unknown" });
    } else if (state === "standing" && uid !== before.uid) {
      log.info(
        "DaemonSet {name} was created again (uid {uid}, was {was}): Lace stays installed, the CNI chain stays",
        { name, uid: uid ?? "unknown", was: before.uid ?? "unknown" },
      );
    } else if (state === "standing" && before.state !== "standing") {
      log.info("DaemonSet {name} is no longer being deleted (uid {uid})", { name, uid });
    }
  }

  async #open(): Promise<void> {
    if (this.#stopped) return;
    const { namespace, name } = this.#o;
    const fieldSelector = `metadata.name=${name}`;
    const again = (error: unknown) => {
      this.#controller = null;
      if (this.#stopped) return;
      if (error) {
        log.debug("Watch of DaemonSet {name} ended: {error}", { name, error: String(error) });
      }
      this.#retry = this.#timers.setTimeout(() => void this.#open(), this.#o.retryMs ?? 1000);
    };
    try {
      if (this.#resourceVersion === undefined) {
        const list = await this.#o.list(fieldSelector);
        if (this.#stopped) return;
        const found = (list.items ?? []).find((d) => d.metadata !== undefined);
        this.#observe(found);
        this.#resourceVersion = list.metadata?.resourceVersion;
      }
      this.#controller = await this.#o.watch(
        `/apis/apps/v1/namespaces/${namespace}/daemonsets`,
        {
          fieldSelector,
          resourceVersion: this.#resourceVersion,
          allowWatchBookmarks: true,
        },
        (phase, object) => this.#event(phase, object as DaemonSetObject),
        again,
      );
      if (this.#stopped) this.#controller?.abort();
    } catch (error) {
      again(error);
    }
  }

  #event(phase: string, object: DaemonSetObject): void {
    if (phase === "ERROR") {
      // 410 Gone: the resourceVersion is too old to resume from; list again.
      if ((object as { code?: unknown })?.code === 410) this.#resourceVersion = undefined;
      return;
    }
    const rv = object?.metadata?.resourceVersion;
    if (rv) this.#resourceVersion = rv;
    if (phase === "ADDED" || phase === "MODIFIED") this.#observe(object);
    else if (phase === "DELETED") this.#observe(object, true);
  }

  /**
   * Whether Lace is being uninstalled: a GET now finds the DaemonSet gone
   * (404) or marked for deletion; one standing (the same, or created again
   * since) means not. When the GET fails or takes too long (an API away, a
   * Role already gone) the watch's last word answers; without one, not: the
   * chain stays. It never waits past getTimeoutMs: the kubelet kills the pod
   * at the end of its grace period, before anything after the answer ran.
   */
  async uninstalling(): Promise<boolean> {
    try {
      const ms = this.#o.getTimeoutMs ?? 5000;
      this.#observe(
        await within(this.#timers, this.#o.get(), ms, `GET of DaemonSet ${this.#o.name}`),
      );
    } catch (e) {
      if (apiStatus(e) === 404) this.#observe(undefined);
      else {
        log.warning("Cannot read DaemonSet {name}: {error}; the watch's last word answers", {
          name: this.#o.name,
          error: String(e),
        });
      }
    }
    return this.deleting;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#retry !== null) this.#timers.clearTimeout(this.#retry);
    this.#controller?.abort();
    this.#controller = null;
  }
}
