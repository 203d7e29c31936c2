/**
 * Which container runtime the node runs, for the chaining's choice of the file the runtime
 * uses (lib/cni/chaining/runtime_file.ts): the one `--container-runtime` names, or with
 * `auto` the one the Node's `status.nodeInfo.containerRuntimeVersion` names, read from the API
 * until it is known (the API may be down when the agent starts: retried with backoff).
 */
import { getLogger } from "@logtape/logtape";
import { type Backoff, backoffDelay } from "../time/backoff.ts";
import type { Timers } from "../time/timers.ts";
import {
  type ContainerRuntime,
  type ContainerRuntimeMode,
  runtimeOfVersion,
} from "../cni/chaining/runtimes.ts";
import type { RuntimeView } from "../agent_api/views.ts";

const log = getLogger(["lace", "cni", "chaining"]);

export interface NodeRuntimeOptions {
  mode: ContainerRuntimeMode;
  /** Reads the Node's containerRuntimeVersion; absent: no API, the runtime stays unknown. */
  readVersion?: () => Promise<string>;
  timers: Timers;
  backoff?: Backoff;
  /** The Node names a runtime the agent has no rule for (said once). */
  onUnknown?: (message: string) => void;
}

const READ_BACKOFF: Backoff = { initialMs: 1000, maxMs: 5 * 60_000 };

/** See the module comment. */
export class NodeRuntime {
  readonly #o: NodeRuntimeOptions;
  #view: RuntimeView;
  #timer: unknown = null;
  #stopped = false;
  #failures = 0;

  constructor(options: NodeRuntimeOptions) {
    this.#o = options;
    this.#view = options.mode === "auto" ? { mode: "auto" } : {
      mode: options.mode,
      runtime: options.mode,
    };
  }

  /** Whether the runtime must still be read from the Node. */
  get reading(): boolean {
    return this.#o.mode === "auto" && this.#o.readVersion !== undefined;
  }

  /** Reads the Node (in auto); settles after the first read, whether it worked or not. */
  start(): Promise<void> {
    if (!this.reading) {
      if (this.#o.mode === "auto") {
        log.warning(
          "Cannot read the Node's container runtime without the API: the CNI file is chosen by CRI-O's rule (the first file it can load); set --container-runtime",
        );
      }
      return Promise.resolve();
    }
    return this.#read();
  }

  async #read(): Promise<void> {
    if (this.#stopped) return;
    let version: string;
    try {
      version = await this.#o.readVersion!();
    } catch (error) {
      this.#failures++;
      if (this.#failures === 1) {
        log.warning(
          "Cannot read the Node's container runtime ({error}): retrying; meanwhile the CNI file is chosen by CRI-O's rule",
          { error: String(error) },
        );
      }
      if (!this.#stopped) {
        const delay = backoffDelay(this.#failures, this.#o.backoff ?? READ_BACKOFF);
        this.#timer = this.#o.timers.setTimeout(() => void this.#read(), delay);
      }
      return;
    }
    const runtime = runtimeOfVersion(version);
    this.#view = { mode: "auto", version, ...(runtime ? { runtime } : {}) };
    if (runtime) {
      log.info("The node's container runtime is {version}: chaining the CNI file it uses", {
        version,
      });
      return;
    }
    const message =
      `The node's container runtime "${version}" is neither containerd nor CRI-O: the CNI file is chosen by CRI-O's rule (the first file it can load); set --container-runtime if the runtime uses another`;
    log.warning("{message}", { message });
    this.#o.onUnknown?.(message);
  }

  current(): ContainerRuntime | undefined {
    return this.#view.runtime;
  }

  view(): RuntimeView {
    return this.#view;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = null;
  }
}
