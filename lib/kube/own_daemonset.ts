/**
 * Whether the agent's own DaemonSet is being removed (`helm uninstall`,
 * `kubectl delete`), which is what tells an uninstall from a restart or an
 * upgrade. A watch on that one DaemonSet sees its deletion as it happens: the
 * DaemonSet goes before its pods get SIGTERM, and before helm removes the
 * Role that lets the agent read it, so a question asked only at SIGTERM
 * could be refused. At SIGTERM a last GET settles what the watch missed.
 */
import { getLogger } from "@logtape/logtape";
import { realTimers, type Timers } from "../time/timers.ts";

const log = getLogger(["lace", "kube"]);

type WatchCallback = (phase: string, object: unknown) => void;

export interface OwnDaemonSetOptions {
  namespace: string;
  name: string;
  /** client-node's Watch#watch, bound. */
  watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    callback: WatchCallback,
    done: (error: unknown) => void,
  ): Promise<AbortController>;
  /** readNamespacedDaemonSet for this DaemonSet. */
  get(): Promise<{ metadata?: { deletionTimestamp?: unknown } }>;
  timers?: Timers;
  /** Delay before a watch that ended is opened again; default 1 s. */
  retryMs?: number;
}

function deleting(object: unknown): boolean {
  const meta = (object as { metadata?: { deletionTimestamp?: unknown } })?.metadata;
  return meta?.deletionTimestamp !== undefined && meta?.deletionTimestamp !== null;
}

/** See the module comment. */
export class OwnDaemonSet {
  readonly #o: OwnDaemonSetOptions;
  readonly #timers: Timers;
  #deleting = false;
  #stopped = true;
  #controller: AbortController | null = null;
  #retry: unknown = null;

  constructor(options: OwnDaemonSetOptions) {
    this.#o = options;
    this.#timers = options.timers ?? realTimers;
  }

  /** True once the watch saw the DaemonSet deleted or marked for deletion. */
  get deleting(): boolean {
    return this.#deleting;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    void this.#open();
  }

  async #open(): Promise<void> {
    if (this.#stopped) return;
    const { namespace, name } = this.#o;
    const again = (error: unknown) => {
      this.#controller = null;
      if (this.#stopped) return;
      if (error) {
        log.debug("Watch of DaemonSet {name} ended: {error}", { name, error: String(error) });
      }
      this.#retry = this.#timers.setTimeout(() => void this.#open(), this.#o.retryMs ?? 1000);
    };
    try {
      this.#controller = await this.#o.watch(
        `/apis/apps/v1/namespaces/${namespace}/daemonsets`,
        { fieldSelector: `metadata.name=${name}` },
        (phase, object) => {
          if (phase === "DELETED" || deleting(object)) {
            if (!this.#deleting) log.info("DaemonSet {name} is being deleted", { name });
            this.#deleting = true;
          }
        },
        again,
      );
      if (this.#stopped) this.#controller?.abort();
    } catch (error) {
      again(error);
    }
  }

  /**
   * Whether Lace is being uninstalled: the watch saw the deletion, or a GET
   * now finds the DaemonSet gone (404) or marked for deletion. Any other
   * answer (an API away, a Role already gone) counts as not: the chain stays.
   */
  async uninstalling(): Promise<boolean> {
    if (this.#deleting) return true;
    try {
      return deleting(await this.#o.get());
    } catch (e) {
      if ((e as { code?: unknown })?.code === 404) return true;
      log.warning("Cannot read DaemonSet {name}: {error}", {
        name: this.#o.name,
        error: String(e),
      });
      return this.#deleting;
    }
  }

  stop(): void {
    this.#stopped = true;
    if (this.#retry !== null) this.#timers.clearTimeout(this.#retry);
    this.#controller?.abort();
    this.#controller = null;
  }
}
