/**
 * @kubernetes/client-node for the rest of lib/, loaded once per process:
 * from the bundle that `deno task bundle` builds (client_node.bundle.js,
 * beside this file: only the parts client_node.ts names, tree-shaken and
 * minified) when it is there and whole, else from client-node's own modules.
 * Both are the same library code. The bundle leaves out the generated API and
 * model sources the agent never calls, which V8 otherwise keeps in memory once
 * loaded (what that costs: bench/RESULTS.md, figure 4).
 *
 * Every value of client-node that lib/ uses comes from here, so a process
 * holds one copy of the client (a KubeConfig of one copy and an API class of
 * another would share no state). Types may be imported from client-node
 * directly: they are erased.
 */
import type * as Parts from "./client_node.ts";
import type { KubernetesObject } from "@kubernetes/client-node/dist/types.js";
import { getLogger } from "@logtape/logtape";
import { createHash } from "node:crypto";
import {
  type BundleInputs,
  bundleInputs,
  parseBundleRecord,
  recordInputsProblem,
} from "./bundle_record.ts";

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
  "DiscoveryV1Api",
  "VersionApi",
] as const satisfies readonly (keyof ClientNode)[];
type Unlisted = Exclude<keyof ClientNode, typeof CLIENT_NODE_PARTS[number]>;
const _everyPartListed: [Unlisted] extends [never] ? true : Unlisted = true;

/** Where the bundle is: beside this file, in the source tree and in the compiled binary. */
export const CLIENT_NODE_BUNDLE = new URL("./client_node.bundle.js", import.meta.url);
/** The record that vouches for the bundle (bundle_record.ts), tracked by git, written by the build. */
export const CLIENT_NODE_BUNDLE_RECORD = new URL("./client_node.bundle.json", import.meta.url);
/** In a variable, so `deno run` reads client-node's module graph only when it is needed. */
const CLIENT_NODE_MODULES = new URL("./client_node.ts", import.meta.url);
const LOCKFILE = new URL("../../deno.lock", import.meta.url);

/**
 * What a bundle is checked against: the record, and the inputs the record must have been made
 * from. `entry` and `lockfile` are unset in a compiled binary, which carries neither: `deno task
 * compile` checked them when it embedded the bundle, and nothing can change a binary's copy.
 */
export interface BundleTrust {
  record: URL;
  deno: string;
  entry?: URL;
  lockfile?: URL;
}

/** The record beside this file, this Deno, and (run from source) the entry and the lockfile. */
export const CLIENT_NODE_TRUST: BundleTrust = Deno.build.standalone
  ? { record: CLIENT_NODE_BUNDLE_RECORD, deno: Deno.version.deno }
  : {
    record: CLIENT_NODE_BUNDLE_RECORD,
    deno: Deno.version.deno,
    entry: CLIENT_NODE_MODULES,
    lockfile: LOCKFILE,
  };

/** What loadClientNode() found: the parts, where from, and why not from the bundle. */
export interface LoadedClientNode {
  parts: ClientNode;
  from: "bundle" | "modules";
  /** Why the bundle was not used (absent, refused, unreadable, or missing parts); unset when it was. */
  bundleProblem?: string;
  /** Set when a bundle was there and was refused or failed: worth a warning, not a note. */
  bundleRefused?: true;
}

/**
 * Imports the bundle at `bundle` if its bytes hash to the record in `trust`, the record was made
 * from the inputs in `trust`, and it exports every part; else the modules at `modules`. Throws
 * only when the modules cannot be loaded either (a compiled binary, which carries no modules,
 * whose bundle fails its check).
 *
 * The bytes hashed are read again by import(): whoever could change the file between the two can
 * change this loader too (both sit in the source tree; a compiled binary's copy is read-only), and
 * importing the very bytes hashed (a blob: URL) costs many times the RSS the check itself does
 * (bench/RESULTS.md, "Figures behind the code's comments").
 */
export async function loadClientNode(
  bundle: URL = CLIENT_NODE_BUNDLE,
  modules: URL = CLIENT_NODE_MODULES,
  trust: BundleTrust = CLIENT_NODE_TRUST,
): Promise<LoadedClientNode> {
  let bundleProblem: string;
  let bundleRefused: true | undefined = true;
  try {
    const untrusted = await bundleTrustProblem(bundle, trust);
    if (untrusted !== undefined) throw new UntrustedBundle(untrusted);
    const parts = await import(bundle.href) as Partial<ClientNode>;
    const missing = CLIENT_NODE_PARTS.filter((name) => parts[name] === undefined);
    if (missing.length === 0) return { parts: parts as ClientNode, from: "bundle" };
    bundleProblem = `${bundle.pathname} lacks ${missing.join(", ")} (built from an older ` +
      "client_node.ts: run deno task bundle)";
  } catch (e) {
    if (e instanceof UntrustedBundle) {
      bundleProblem = `${bundle.pathname} is refused: ${e.message}`;
    } else if (isModuleNotFound(e)) {
      bundleProblem = `${bundle.pathname} is not built (deno task bundle builds it)`;
      bundleRefused = undefined;
    } else {
      bundleProblem = `${bundle.pathname} cannot be loaded: ${(e as Error)?.message ?? e}`;
    }
  }
  try {
    return {
      parts: await import(modules.href) as ClientNode,
      from: "modules",
      bundleProblem,
      ...(bundleRefused ? { bundleRefused } : {}),
    };
  } catch (cause) {
    throw new Error(
      `The Kubernetes client cannot be loaded: ${bundleProblem}, and client-node's modules ` +
        `failed too: rebuild with deno task bundle (or deno task compile)`,
      { cause },
    );
  }
}

class UntrustedBundle extends Error {}

/**
 * Why the bundle at `bundle` is not vouched for by the record in `trust`, or undefined when it
 * is. Throws NotFound when there is no bundle (nothing to refuse).
 */
async function bundleTrustProblem(bundle: URL, trust: BundleTrust): Promise<string | undefined> {
  // Read first: NotFound here means there is no bundle at all.
  const actual = await sha256OfFile(bundle);
  let recordText: string;
  try {
    recordText = await Deno.readTextFile(trust.record);
  } catch (e) {
    return `its record ${trust.record.pathname} cannot be read (${(e as Error).message}): ` +
      "run deno task bundle, which writes it, and commit it";
  }
  let record;
  try {
    record = parseBundleRecord(JSON.parse(recordText));
  } catch (e) {
    return `its record ${trust.record.pathname} is not valid: ${(e as Error).message}`;
  }
  const inputs: Partial<BundleInputs> = { deno: trust.deno };
  try {
    if (trust.entry && trust.lockfile) {
      Object.assign(
        inputs,
        bundleInputs(
          await Deno.readFile(trust.entry),
          await Deno.readFile(trust.lockfile),
          trust.deno,
        ),
      );
    }
  } catch (e) {
    return `the inputs its record names cannot be read: ${(e as Error).message}`;
  }
  const stale = recordInputsProblem(record, inputs);
  if (stale) {
    return `its record ${trust.record.pathname} was ${stale}: run deno task bundle and commit ` +
      "the record";
  }
  if (actual !== record.bundle) {
    return `its sha256 is ${actual}, the record's ${record.bundle}: it is not what the build ` +
      "makes from the lockfile (changed after the build?); run deno task bundle";
  }
  return undefined;
}

/** sha256 (hex) of the file at `url`, read in 64 KiB pieces rather than held whole. */
async function sha256OfFile(url: URL): Promise<string> {
  const hash = createHash("sha256");
  using file = await Deno.open(url);
  const chunk = new Uint8Array(64 * 1024);
  for (let n; (n = await file.read(chunk)) !== null;) hash.update(chunk.subarray(0, n));
  return hash.digest("hex");
}

function isModuleNotFound(e: unknown): boolean {
  return (e as { code?: unknown })?.code === "ERR_MODULE_NOT_FOUND" ||
    e instanceof Deno.errors.NotFound || /Module not found/i.test(String(e));
}

const loaded = await loadClientNode();
if (loaded.bundleProblem) {
  const log = getLogger(["lace", "kube"]);
  const message =
    "Loading client-node's own modules, about 40 MiB more memory than its bundle: {problem}";
  if (loaded.bundleRefused) log.warn(message, { problem: loaded.bundleProblem });
  else log.info(message, { problem: loaded.bundleProblem });
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
  DiscoveryV1Api,
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
export type DiscoveryV1Api = Parts.DiscoveryV1Api;
export type VersionApi = Parts.VersionApi;
