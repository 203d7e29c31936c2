/**
 * The Kubernetes client setup the agent and `lace netcheck` share: a
 * KubeConfig from `--kubeconfig`, else the KUBECONFIG variable, else the
 * in-cluster service account. Loads the Kubernetes client (lib/kube/k8s.ts,
 * about 0.3 s), so callers import this module lazily, only when they talk to
 * the API.
 */
import { createHash } from "node:crypto";
import { KubeConfig } from "./k8s.ts";
import { getLogger } from "@logtape/logtape";

const log = getLogger(["lace", "kube"]);

type DispatcherOptions = ReturnType<KubeConfig["createDispatcherOptions"]>;

/**
 * A KubeConfig whose connections speak HTTP/1.1 only. client-node 2.0.1 sends
 * requests through undici, which offers HTTP/2; kube-apiserver accepts it, and
 * Deno 2.9's node:http2 then crashes the whole process (a segfault, or the
 * nghttp2 assertion "stream->closed_next == NULL" in find_stream_on_goaway_func)
 * when the API server sends GOAWAY, as it does on shutdown and with
 * --goaway-chance. A node agent must outlive API server restarts, so every
 * client Lace builds stays on HTTP/1.1.
 */
export class Http1KubeConfig extends KubeConfig {
  /** The one dispatcher every request shares while the TLS settings stay the same. */
  #shared?: { key: string; dispatcher: Dispatcher };
  #watchFailureListeners = new Set<WatchFailureListener>();

  constructor() {
    super();
    // client-node 2.0.1 builds a new undici Agent, so a new TCP+TLS connection, for every
    // request (a TS-private method, replaced here at run time). Lace's list, watch, liveness
    // probe and Events share one keep-alive pool instead; a new one is built only when the TLS
    // material read for a request changes (a rotated client certificate or CA).
    const self = this as unknown as { createDispatcher: CreateDispatcher };
    const create = self.createDispatcher.bind(this);
    self.createDispatcher = (cluster, agentOptions) => {
      const key = dispatcherKey(this.createDispatcherOptions(cluster, agentOptions));
      if (this.#shared?.key === key) return this.#shared.dispatcher;
      const built = create(cluster, agentOptions);
      if (!built) return built;
      const old = this.#shared?.dispatcher;
      const interceptor = watchInterceptor((error) => this.#watchFailed(error));
      this.#shared = { key, dispatcher: built.compose(interceptor) };
      // close() lets requests in flight (an open watch) finish on the old pool.
      old?.close().catch(() => {});
      return this.#shared.dispatcher;
    };
  }

  /**
   * Calls `listener` when the connection of an open watch fails under it (the API server went
   * away), which under Deno the watch itself never reports: see watchInterceptor. Returns the
   * function that unregisters it.
   */
  onWatchFailure(listener: WatchFailureListener): () => void {
    this.#watchFailureListeners.add(listener);
    return () => this.#watchFailureListeners.delete(listener);
  }

  #watchFailed(error: unknown): void {
    // Later, not inside undici's callback: a listener restarts the watch, which aborts requests.
    queueMicrotask(() => {
      for (const listener of this.#watchFailureListeners) {
        try {
          listener(error);
        } catch (listenerError) {
          log.error("A watch failure listener failed: {error}", { error: listenerError });
        }
      }
    });
  }

  override createDispatcherOptions(
    ...args: Parameters<KubeConfig["createDispatcherOptions"]>
  ): DispatcherOptions {
    const options = super.createDispatcherOptions(...args);
    if (options.type === "none") {
      // No TLS settings of its own (e.g. a token and a publicly trusted server): client-node
      // would fall back to the global dispatcher, which offers HTTP/2. Use an agent that does not.
      return {
        type: "agent",
        connect: { allowH2: false, keepAlive: true, keepAliveInitialDelay: 30_000 },
      } as DispatcherOptions;
    }
    if (options.type === "agent" || options.type === "proxy") {
      // undici's connector reads allowH2 from the connect options, which node's types lack.
      const connect: typeof options.connect = Object.assign({}, options.connect, {
        allowH2: false,
      });
      return { ...options, connect };
    }
    return options;
  }
}

/** The subset of undici's Dispatcher this module uses (client-node's undici, not imported here). */
interface Dispatcher {
  compose(interceptor: Interceptor): Dispatcher;
  close(): Promise<void>;
}
type DispatchOptions = { path: string; bodyTimeout?: number | null };
type Dispatch = (options: DispatchOptions, handler: object) => boolean;
type Interceptor = (dispatch: Dispatch) => Dispatch;
type CreateDispatcher = (
  ...args: Parameters<KubeConfig["createDispatcherOptions"]>
) => Dispatcher | undefined;

/** Told that an open watch's connection failed; the error is undici's (e.g. UND_ERR_SOCKET). */
export type WatchFailureListener = (error: unknown) => void;

/**
 * What the shared pool does to watch requests (`?watch=true`):
 *
 * - No body timeout: undici's default (300 s) keeps its coarse timer ticking twice a second for
 *   as long as the watch is open, which wakes an idle agent. A dead watch is noticed by the two
 *   points below and by the pod source's own liveness check.
 * - Failures reported to `failed`. Under Deno 2.9 a response body whose connection closed (the
 *   API server stopped or restarted) neither ends nor errors: undici's fetch never settles the
 *   stream, so client-node's watch never calls its done callback and the watch looks merely
 *   quiet. The dispatcher's handler is told, though (onResponseError with UND_ERR_SOCKET), so
 *   the handler is wrapped to pass that on. Aborts and timeouts are the client's own doing, not
 *   failures, and are not reported.
 */
function watchInterceptor(failed: WatchFailureListener): Interceptor {
  return (dispatch) => (options, handler) => {
    if (!/[?&]watch=(true|1)\b/.test(options.path)) return dispatch(options, handler);
    return dispatch({ ...options, bodyTimeout: 0 }, reportingFailures(handler, failed));
  };
}

/** `handler` as it is, but its error callbacks (undici's new and old names) also call `failed`. */
export function reportingFailures<T extends object>(handler: T, failed: WatchFailureListener): T {
  return new Proxy(handler, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      // Bound to the handler itself: undici's handlers keep their state in private fields.
      if (property !== "onResponseError" && property !== "onError") return value.bind(target);
      return (...args: unknown[]) => {
        const error = args[args.length - 1];
        if (!isOwnAbort(error)) failed(error);
        return value.apply(target, args);
      };
    },
  });
}

/** Whether a request ended because the client aborted it or timed it out, not the connection. */
function isOwnAbort(error: unknown): boolean {
  const { name, code } = (error ?? {}) as { name?: unknown; code?: unknown };
  return name === "AbortError" || name === "TimeoutError" || code === "UND_ERR_ABORTED";
}

/** Dispatcher options as a string that changes when any TLS setting (CA, key, certificate) does. */
function dispatcherKey(options: DispatcherOptions): string {
  // The holder's own value: JSON.stringify hands a replacer a Buffer already turned into JSON.
  return JSON.stringify(options, function (this: Record<string, unknown>, key, value) {
    const own = this[key];
    return own instanceof Uint8Array ? createHash("sha256").update(own).digest("base64") : value;
  });
}

const SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

export interface KubeConfigSources {
  /** The `--kubeconfig` flag; empty or undefined means not given. */
  kubeconfig?: string;
  /** Environment lookup, replaceable in tests; defaults to Deno.env.get. */
  env?: (name: string) => string | undefined;
  /** Whether a path exists, replaceable in tests. */
  exists?: (path: string) => boolean;
}

function fileExists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Builds a KubeConfig from the first source that is present: the flag, then
 * KUBECONFIG (the first file of a colon-separated list), then the in-cluster
 * service account. Throws an Error saying what was tried and what to do.
 */
export function loadKubeConfig(sources: KubeConfigSources = {}): KubeConfig {
  const env = sources.env ?? ((name: string) => Deno.env.get(name));
  const exists = sources.exists ?? fileExists;
  const kc = new Http1KubeConfig();
  const fromFile = (path: string, origin: string) => {
    if (!exists(path)) {
      throw new Error(`Kubeconfig "${path}" from ${origin} does not exist: fix the path`);
    }
    try {
      kc.loadFromFile(path);
    } catch (cause) {
      throw new Error(`Kubeconfig "${path}" from ${origin} cannot be read: ${cause}`, { cause });
    }
    if (!kc.getCurrentCluster()) {
      throw new Error(
        `Kubeconfig "${path}" from ${origin} has no current cluster: set current-context`,
      );
    }
    log.debug("Using kubeconfig {path} from {origin}", { path, origin });
    return kc;
  };
  if (sources.kubeconfig) return fromFile(sources.kubeconfig, "--kubeconfig");
  const variable = env("KUBECONFIG");
  if (variable) {
    const first = variable.split(":").find((p) => p !== "");
    if (first) return fromFile(first, "KUBECONFIG");
  }
  const host = env("KUBERNETES_SERVICE_HOST");
  if (host && exists(SERVICE_ACCOUNT_TOKEN)) {
    kc.loadFromCluster();
    log.debug("Using the in-cluster service account for {host}", { host });
    return kc;
  }
  throw new Error(
    "No Kubernetes API configuration: give --kubeconfig, set KUBECONFIG, or run in a pod with a " +
      `service account (KUBERNETES_SERVICE_HOST ${host ? "set" : "unset"}, ` +
      `${SERVICE_ACCOUNT_TOKEN} ${exists(SERVICE_ACCOUNT_TOKEN) ? "present" : "missing"})`,
  );
}
