/**
 * The Kubernetes client setup the agent and `lace netcheck` share: a
 * KubeConfig from `--kubeconfig`, else the KUBECONFIG variable, else the
 * in-cluster service account. Imports client-node (about 0.5 s), so callers
 * import this module lazily, only when they talk to the API.
 */
import { KubeConfig } from "@kubernetes/client-node";
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
