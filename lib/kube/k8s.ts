/**
 * @kubernetes/client-node for the rest of lib/, loaded once per process:
 * from the bundle that `deno task bundle` builds (client_node.bundle.js,
 * beside this file: only the parts client_node.ts names, tree-shaken and
 * minified) when it is there and whole, else from client-node's own modules.
 * Both are the same library code. The bundle leaves out the ~25 MB of
 * generated API and model sources the agent never calls, which V8 otherwise
 * keeps in memory once loaded: about 40 MiB of RSS (bench/RESULTS.md,
 * figure 4).
 *
 * Every value of client-node that lib/ uses comes from here, so a process
 * holds one copy of the client (a KubeConfig of one copy and an API class of
 * another would share no state). Types may be imported from client-node
 * directly: they are erased.
 */
import type * as Parts from "./client_node.ts";
import type { KubernetesObject } from "@kubernetes/client-node/dist/types.js";
import { getLogger } from "@logtape/logtape";

/** The module client_node.ts is, and the bundle must be. */
export type ClientNode = typeof Parts;

/** Every export of client_node.ts (the type below fails to compile when one is left out). */
export const CLIENT_NODE_PARTS = [
  "KubeConfig",
  "ListWatch",
  "Watch",
  "Exec",
  "PatchStrategy",
  "V1MicroTime",
  "setHeaderOptions",
  "AppsV1Api",
  "CoordinationV1Api",
  "CoreV1Api",
  "VersionApi",
] as const satisfies readonly (keyof ClientNode)[];
type Unlisted = Exclude<keyof ClientNode, typeof CLIENT_NODE_PARTS[number]>;
const _everyPartListed: [Unlisted] extends [never] ? true : Unlisted = true;

/** Where the bundle is: beside this file, in the source tree and in the compiled binary. */
export const CLIENT_NODE_BUNDLE = new URL("./client_node.bundle.js", import.meta.url);
/** In a variable, so `deno run` reads client-node's module graph only when it is needed. */
const CLIENT_NODE_MODULES = new URL("./client_node.ts", import.meta.url);

/** What loadClientNode() found: the parts, where from, and why not from the bundle. */
export interface LoadedClientNode {
  parts: ClientNode;
  from: "bundle" | "modules";
  /** Why the bundle was not used (absent, unreadable, or missing parts); unset when it was. */
  bundleProblem?: string;
}

/**
 * Imports the bundle at `bundle` if it exports every part, else the modules at `modules`.
 * Throws only when the modules cannot be loaded either (a compiled binary built without the
 * bundle, which `deno task compile` never does).
 */
export async function loadClientNode(
  bundle: URL = CLIENT_NODE_BUNDLE,
  modules: URL = CLIENT_NODE_MODULES,
): Promise<LoadedClientNode> {
  let bundleProblem: string;
  try {
    const parts = await import(bundle.href) as Partial<ClientNode>;
    const missing = CLIENT_NODE_PARTS.filter((name) => parts[name] === undefined);
    if (missing.length === 0) return { parts: parts as ClientNode, from: "bundle" };
    bundleProblem = `${bundle.pathname} lacks ${missing.join(", ")} (built from an older ` +
      "client_node.ts: run deno task bundle)";
  } catch (e) {
    bundleProblem = isModuleNotFound(e)
      ? `${bundle.pathname} is not built (deno task bundle builds it)`
      : `${bundle.pathname} cannot be loaded: ${(e as Error)?.message ?? e}`;
  }
  try {
    return { parts: await import(modules.href) as ClientNode, from: "modules", bundleProblem };
  } catch (cause) {
    throw new Error(
      `The Kubernetes client cannot be loaded: ${bundleProblem}, and client-node's modules ` +
        `failed too: rebuild with deno task bundle (or deno task compile)`,
      { cause },
    );
  }
}

function isModuleNotFound(e: unknown): boolean {
  return (e as { code?: unknown })?.code === "ERR_MODULE_NOT_FOUND" ||
    e instanceof Deno.errors.NotFound || /Module not found/i.test(String(e));
}

const loaded = await loadClientNode();
if (loaded.bundleProblem) {
  getLogger(["lace", "kube"]).info(
    "Loading client-node's own modules, about 40 MiB more memory than its bundle: {problem}",
    { problem: loaded.bundleProblem },
  );
}

/** Where this process's Kubernetes client came from (shown by the agent's start log). */
export const clientNodeOrigin: LoadedClientNode["from"] = loaded.from;

export const {
  KubeConfig,
  ListWatch,
  Watch,
  Exec,
  PatchStrategy,
  V1MicroTime,
  setHeaderOptions,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  VersionApi,
} = loaded.parts;
export type KubeConfig = Parts.KubeConfig;
export type ListWatch<T extends KubernetesObject> = Parts.ListWatch<T>;
export type Watch = Parts.Watch;
export type Exec = Parts.Exec;
export type V1MicroTime = Parts.V1MicroTime;
export type AppsV1Api = Parts.AppsV1Api;
export type CoordinationV1Api = Parts.CoordinationV1Api;
export type CoreV1Api = Parts.CoreV1Api;
export type VersionApi = Parts.VersionApi;
