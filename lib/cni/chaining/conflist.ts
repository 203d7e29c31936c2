/**
 * Chaining Lace into a CNI network configuration file, as pure functions over
 * the file's name and bytes: what the runtime would make of the file, the
 * file with the `lace` plugin appended, and the file without it. A file that
 * is not a configuration the runtime could load is never rewritten.
 *
 * A single-plugin `.conf` (or `.json`) becomes a `.conflist` the way Istio's
 * CNI installer does it (the same base name, `list` appended to `.conf`), but
 * with libcni's own conversion (`ConfListFromConf`): the list keeps the
 * network's name and cniVersion, where Istio renames the network to
 * `k8s-pod-network` and pins cniVersion 0.3.1.
 */
import { isObject, nestedDeeperThan } from "../../text/json.ts";
import { SUPPORTED_VERSIONS } from "../spec.ts";

/** The plugin type the runtime runs as `<binDir>/lace`. */
export const LACE_TYPE = "lace";
/**
 * The key that marks a `lace` entry as the agent's own: an entry without it
 * was chained by hand and is left exactly as it is. The plugin ignores it.
 */
export const CHAINED_BY_KEY = "chainedBy";
export const CHAINED_BY = "lace-agent";
/** A configuration file larger than this is not a network configuration: it is left alone. */
export const MAX_CONFIG_BYTES = 1024 * 1024;
/**
 * Nesting past this is refused, not chained: rendering it back would overflow the stack. Real
 * configurations nest a few levels; the runtimes' Go parser takes up to 10,000.
 */
export const MAX_CONFIG_DEPTH = 64;

/** A file the runtime may load but Lace will not rewrite (nested too deep to write back). */
class ConfigRefusedError extends TypeError {}

/**
 * What the agent appends: the socket, where configured for the file the network, and the agent's
 * pin path where it is not the plugin's default (an ADD no agent answers purges the map there).
 */
export interface LaceEntry {
  socket: string;
  network?: string;
  networkId?: number;
  pinPath?: string;
  /** The agent's --address-sharing where it is not the default (exclusive). */
  addressSharing?: "shared";
}

/** A file the runtime could load, seen as a list of plugins. */
export interface ParsedConfig {
  /** The configuration as a list (a single `.conf` wrapped as libcni does). */
  list: Record<string, unknown> & { plugins: Record<string, unknown>[] };
  /** The file held a single plugin (`.conf`, `.json`), not a list. */
  single: boolean;
}

/** The extensions the runtimes read (libcni's ConfFiles as containerd and CRI-O call it). */
export const CONFIG_EXTENSIONS = [".conf", ".conflist", ".json"] as const;

/** True for a name the runtime reads as a network configuration. */
export function isConfigName(name: string): boolean {
  return CONFIG_EXTENSIONS.some((ext) => name.endsWith(ext) && name.length > ext.length);
}

const decoder = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

/**
 * Reads a configuration file as the runtime would; throws a TypeError that
 * says why the runtime could not use it (and so why it is left alone).
 */
export function parseConfig(name: string, bytes: Uint8Array): ParsedConfig {
  if (!isConfigName(name)) {
    throw new TypeError(`"${name}" is not a CNI configuration file (.conf, .conflist or .json)`);
  }
  if (bytes.length > MAX_CONFIG_BYTES) {
    throw new TypeError(`"${name}" is larger than ${MAX_CONFIG_BYTES} bytes`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch (e) {
    throw new TypeError(`"${name}" is not valid JSON: ${(e as Error).message}`);
  }
  if (!isObject(raw)) throw new TypeError(`"${name}" is not a JSON object`);
  if (nestedDeeperThan(raw, MAX_CONFIG_DEPTH)) {
    throw new ConfigRefusedError(
      `"${name}" nests more than ${MAX_CONFIG_DEPTH} levels deep, which Lace does not rewrite (the runtime may still load it)`,
    );
  }
  const version = raw.cniVersion;
  if (typeof version !== "string" || version === "") {
    throw new TypeError(`"${name}" has no cniVersion string`);
  }
  if (typeof raw.name !== "string" || raw.name === "") {
    throw new TypeError(`"${name}" has no network "name" string`);
  }
  if (name.endsWith(".conflist")) {
    const plugins = raw.plugins;
    if (!Array.isArray(plugins) || plugins.length === 0) {
      throw new TypeError(`"${name}" has no "plugins" list (or an empty one)`);
    }
    plugins.forEach((p, i) => checkPlugin(p, `"${name}" plugins[${i}]`));
    return { list: raw as ParsedConfig["list"], single: false };
  }
  checkPlugin(raw, `"${name}"`);
  if ("plugins" in raw) {
    throw new TypeError(`"${name}" holds a "plugins" list but is not named .conflist`);
  }
  // libcni's ConfListFromConf: the network's name and version, the file itself as the one plugin.
  return {
    list: { cniVersion: version, name: raw.name, plugins: [raw] },
    single: true,
  };
}

function checkPlugin(value: unknown, where: string): asserts value is Record<string, unknown> {
  if (!isObject(value)) throw new TypeError(`${where} is not a JSON object`);
  if (typeof value.type !== "string" || value.type === "") {
    throw new TypeError(`${where} has no plugin "type" string`);
  }
}

/** The name a chained file gets: a single-plugin file becomes a `.conflist`. */
export function chainedName(name: string, single: boolean): string {
  if (!single) return name;
  if (name.endsWith(".conf")) return `${name}list`;
  return `${name.slice(0, -".json".length)}.conflist`;
}

function laceIndexes(plugins: Record<string, unknown>[]): number[] {
  return plugins.flatMap((p, i) => p.type === LACE_TYPE ? [i] : []);
}

function isOurs(plugin: Record<string, unknown>): boolean {
  return plugin[CHAINED_BY_KEY] === CHAINED_BY;
}

/** The `lace` plugin entry the agent writes for `entry` (keys in a fixed order). */
export function laceEntry(entry: LaceEntry): Record<string, unknown> {
  return {
    type: LACE_TYPE,
    ...(entry.network !== undefined ? { network: entry.network, networkId: entry.networkId } : {}),
    socket: entry.socket,
    ...(entry.pinPath !== undefined ? { pinPath: entry.pinPath } : {}),
    ...(entry.addressSharing !== undefined ? { addressSharing: entry.addressSharing } : {}),
    [CHAINED_BY_KEY]: CHAINED_BY,
  };
}

/** JSON the way the agent writes every file: two-space indent, final newline. */
export function render(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value, null, 2) + "\n");
}

export type ChainResult =
  /** The runtime could not load the file: it is left alone and reported. */
  | { kind: "unparsable"; error: string }
  /** The runtime could load it, but chaining would break pods (e.g. a cniVersion lace lacks). */
  | { kind: "refused"; error: string }
  /** A `lace` entry without the agent's mark: chained by hand, left as it is. */
  | { kind: "hand-chained" }
  /** The agent's own entry, exactly as it would write it now. */
  | { kind: "chained-already" }
  /** Write `bytes` as `name` (a `.conf` turns into a `.conflist`: remove the old name). */
  | { kind: "write"; name: string; bytes: Uint8Array };

/**
 * The file with the agent's `lace` entry as its last plugin. Never two `lace`
 * entries: a hand-chained one wins, and the agent's own is replaced in place
 * when its settings changed.
 */
export function chainConfig(name: string, bytes: Uint8Array, entry: LaceEntry): ChainResult {
  let parsed: ParsedConfig;
  try {
    parsed = parseConfig(name, bytes);
  } catch (e) {
    const kind = e instanceof ConfigRefusedError ? "refused" : "unparsable";
    return { kind, error: (e as Error).message };
  }
  const { list, single } = parsed;
  const version = list.cniVersion as string;
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
    return {
      kind: "refused",
      error: `"${name}" has cniVersion "${version}", which Lace's plugin does not support (${
        SUPPORTED_VERSIONS.join(", ")
      }): chained, every pod's ADD would fail`,
    };
  }
  const laces = laceIndexes(list.plugins);
  if (laces.some((i) => !isOurs(list.plugins[i]))) return { kind: "hand-chained" };
  const wanted = laceEntry(entry);
  if (
    laces.length === 1 && laces[0] === list.plugins.length - 1 &&
    JSON.stringify(list.plugins[laces[0]]) === JSON.stringify(wanted)
  ) {
    return { kind: "chained-already" };
  }
  const plugins = list.plugins.filter((p) => p.type !== LACE_TYPE);
  return {
    kind: "write",
    name: chainedName(name, single),
    bytes: render({ ...list, plugins: [...plugins, wanted] }),
  };
}

export type UnchainResult =
  | { kind: "unparsable"; error: string }
  /** No entry of the agent's in the file: nothing to take out. */
  | { kind: "not-chained" }
  | { kind: "write"; bytes: Uint8Array };

/**
 * The file without the agent's `lace` entries, rendered anew: the fallback
 * when the bytes from before chaining are not known (the file changed since,
 * or the record was lost). A hand-chained `lace` stays.
 */
export function unchainConfig(name: string, bytes: Uint8Array): UnchainResult {
  let parsed: ParsedConfig;
  try {
    parsed = parseConfig(name, bytes);
  } catch (e) {
    return { kind: "unparsable", error: (e as Error).message };
  }
  const plugins = parsed.list.plugins;
  if (!plugins.some((p) => p.type === LACE_TYPE && isOurs(p))) return { kind: "not-chained" };
  const rest = plugins.filter((p) => !(p.type === LACE_TYPE && isOurs(p)));
  return { kind: "write", bytes: render({ ...parsed.list, plugins: rest }) };
}

/**
 * True when two configurations hold the same list once the agent's entries
 * are taken out: the file the agent chained, whatever its formatting.
 */
export function sameWithoutLace(
  a: { name: string; bytes: Uint8Array },
  b: { name: string; bytes: Uint8Array },
): boolean {
  try {
    const strip = (c: { name: string; bytes: Uint8Array }) => {
      const { list } = parseConfig(c.name, c.bytes);
      return canonical({
        ...list,
        plugins: list.plugins.filter((p) => !(p.type === LACE_TYPE && isOurs(p))),
      });
    };
    return strip(a) === strip(b);
  } catch {
    return false;
  }
}

/** JSON with object keys sorted, so equal values compare equal as text. */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v) =>
      isObject(v) ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => x < y ? -1 : 1)) : v,
  );
}
