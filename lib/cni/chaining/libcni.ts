/**
 * What libcni (containernetworking/cni v1.3, which containerd's go-cni and CRI-O's ocicni use)
 * makes of one file of the configuration directory: which names it lists, and whether it loads
 * a file or fails on it, and why. Read from libcni's ConfFiles, NetworkConfFromBytes,
 * NetworkConfFromFile and NetworkPluginConfFromBytes (libcni/conf.go) and Go's encoding/json;
 * pure, so the runtimes' selection (runtime_file.ts) is tested on bytes.
 *
 * Where JSON.parse and Go differ on a file the runtime can load this follows Go: invalid UTF-8
 * is replaced, a byte order mark is an error, nesting stops at 10,000 levels, a number beyond
 * float64 is an error, and a plugin's known fields match their names in any case (keys that
 * differ only in case are read exact name first, not in file order as Go does).
 */
import { isObject, nestedDeeperThan } from "../../text/json.ts";

/** The extensions containerd and CRI-O ask ConfFiles for. */
export const LIBCNI_EXTENSIONS = [".conf", ".conflist", ".json"] as const;

/** Go's encoding/json refuses nesting deeper than this (scanner.go, maxNestingDepth). */
const GO_MAX_DEPTH = 10_000;

/**
 * True for a name ConfFiles lists: its extension, from the last dot (Go's filepath.Ext), is
 * one of LIBCNI_EXTENSIONS; a bare ".conf" counts too.
 */
export function isLibcniConfName(name: string): boolean {
  const dot = name.lastIndexOf(".");
  return dot >= 0 && (LIBCNI_EXTENSIONS as readonly string[]).includes(name.slice(dot));
}

/** One plugin file of a network's plugin directory (`<dir>/<network name>/*.conf`). */
export interface PluginFile {
  name: string;
  /** null: it cannot be read (not a regular file, too large), which fails the load. */
  bytes: Uint8Array | null;
}

/** What libcni makes of a file: loaded (with where its plugins come from), or why not. */
export type LibcniLoad =
  | {
    ok: true;
    /** The network's plugins read from its plugin directory, after the file's own. */
    pluginDirPlugins: number;
  }
  | { ok: false; error: string };

/** How the loader finds a network's plugin directory; null when there is none. */
export type PluginDir = (network: string) => PluginFile[] | null;

const goDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

/** Go's json.Unmarshal into an interface{}: the value, or the error Go would give. */
function goJson(bytes: Uint8Array): { value: unknown } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(goDecoder.decode(bytes));
  } catch (e) {
    return { error: `not JSON: ${(e as Error).message}` };
  }
  if (nestedDeeperThan(value, GO_MAX_DEPTH)) {
    return { error: `exceeded max depth of ${GO_MAX_DEPTH}` };
  }
  // float64 overflows (1e400) are Go's errors, not Infinity; walked without recursion.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "number" && !Number.isFinite(v)) {
      return { error: "a number out of range for float64" };
    }
    if (v !== null && typeof v === "object") stack.push(...Object.values(v));
  }
  return { value };
}

const goType = (v: unknown) =>
  v === null
    ? "nil"
    : Array.isArray(v)
    ? "[]interface {}"
    : typeof v === "object"
    ? "map[string]interface {}"
    : typeof v === "number"
    ? "float64"
    : typeof v;

/** The value Go's struct decoding gives field `tag`: the exact key, else one equal but for case. */
function field(obj: Record<string, unknown>, tag: string): unknown {
  if (tag in obj) return obj[tag];
  const folded = tag.toLowerCase();
  const keys = Object.keys(obj).filter((k) => k.toLowerCase() === folded);
  return keys.length ? obj[keys[keys.length - 1]] : undefined;
}

type Shape = "string" | "bool-map" | "object" | "string-list" | ((v: unknown) => string | null);

/** Go's error for `v` decoded into a field of `shape`, or null; null always decodes. */
function shapeError(v: unknown, shape: Shape): string | null {
  if (v === null || v === undefined) return null;
  if (typeof shape === "function") return shape(v);
  const ok = shape === "string"
    ? typeof v === "string"
    : shape === "bool-map"
    ? isObject(v) && Object.values(v).every((b) => typeof b === "boolean" || b === null)
    : shape === "object"
    ? isObject(v)
    : Array.isArray(v) && v.every((s) => typeof s === "string" || s === null);
  return ok ? null : `cannot unmarshal ${goType(v)} into a ${shape} field`;
}

function fieldsError(obj: Record<string, unknown>, fields: [string, Shape][]): string | null {
  for (const [tag, shape] of fields) {
    const bad = shapeError(field(obj, tag), shape);
    if (bad) return `"${tag}": ${bad}`;
  }
  return null;
}

/** libcni's types.PluginConf, as json.Unmarshal fills it. */
const PLUGIN_FIELDS: [string, Shape][] = [
  ["cniVersion", "string"],
  ["name", "string"],
  ["type", "string"],
  ["capabilities", "bool-map"],
  ["ipam", (v) => isObject(v) ? fieldsError(v, [["type", "string"]]) : `not an object`],
  ["dns", (v) =>
    isObject(v)
      ? fieldsError(v, [
        ["nameservers", "string-list"],
        ["domain", "string"],
        ["search", "string-list"],
        ["options", "string-list"],
      ])
      : "not an object"],
  ["prevResult", "object"],
  ["cni.dev/valid-attachments", (v) =>
    Array.isArray(v) && v.every((a) =>
        a === null ||
        isObject(a) && fieldsError(a, [["containerID", "string"], ["ifname", "string"]]) === null
      )
      ? null
      : "not a list of attachments"],
];

/** NetworkPluginConfFromBytes: one plugin's configuration; null when libcni takes it. */
function pluginError(value: unknown): string | null {
  if (value !== null && !isObject(value)) {
    return `cannot unmarshal ${goType(value)} into types.PluginConf`;
  }
  if (value === null) return "missing 'type'";
  const bad = fieldsError(value, PLUGIN_FIELDS);
  if (bad) return bad;
  const type = field(value, "type");
  return typeof type === "string" && type !== "" ? null : "missing 'type'";
}

function versionError(v: string): string | null {
  const parts = v.split(".");
  if (parts.length >= 4) return `invalid version "${v}": too many parts`;
  const bad = parts.find((p) => !/^[+-]?[0-9]+$/.test(p));
  return bad === undefined ? null : `invalid version "${v}": "${bad}" is not a number`;
}

const readBool = (list: Record<string, unknown>, key: string): boolean | string => {
  const v = list[key];
  if (v === undefined || typeof v === "boolean") return v === true;
  if (typeof v === "string" && ["true", "false"].includes(v.toLowerCase())) {
    return v.toLowerCase() === "true";
  }
  return `invalid ${key} ${JSON.stringify(v)}`;
};

/** NetworkConfFromBytes: the list's name, its inline plugins, and whether its directory counts. */
function parseList(
  raw: unknown,
): { error: string } | { name: string; inline: number; pluginDir: boolean } {
  if (raw === null) return { error: "no name" };
  if (!isObject(raw)) return { error: `cannot unmarshal ${goType(raw)} into a map` };
  if (!("name" in raw)) return { error: "no name" };
  if (typeof raw.name !== "string") return { error: `invalid name type ${goType(raw.name)}` };
  if ("cniVersion" in raw && typeof raw.cniVersion !== "string") {
    return { error: `invalid cniVersion type ${goType(raw.cniVersion)}` };
  }
  if ("cniVersions" in raw) {
    const vs = raw.cniVersions;
    if (!Array.isArray(vs)) return { error: `invalid type for cniVersions: ${goType(vs)}` };
    for (const v of [...vs, ...(raw.cniVersion ? [raw.cniVersion] : [])]) {
      if (typeof v !== "string") return { error: `invalid cniVersions entry type ${goType(v)}` };
      const bad = versionError(v);
      if (bad) return { error: bad };
    }
  }
  const flags: Record<string, boolean> = {};
  for (const key of ["disableCheck", "disableGC", "loadOnlyInlinedPlugins"]) {
    const b = readBool(raw, key);
    if (typeof b === "string") return { error: b };
    flags[key] = b;
  }
  if (!("plugins" in raw)) {
    return flags.loadOnlyInlinedPlugins
      ? { error: "`loadOnlyInlinedPlugins` is true, and no 'plugins' key" }
      : { name: raw.name, inline: 0, pluginDir: true };
  }
  const plugins = raw.plugins;
  if (!Array.isArray(plugins)) return { error: `invalid 'plugins' type ${goType(plugins)}` };
  if (plugins.length === 0) return { error: "no plugins in list" };
  for (const [i, p] of plugins.entries()) {
    const bad = pluginError(p);
    if (bad) return { error: `failed to parse plugin config ${i}: ${bad}` };
  }
  return { name: raw.name, inline: plugins.length, pluginDir: !flags.loadOnlyInlinedPlugins };
}

/**
 * What containerd and CRI-O make of the file `name` holding `bytes`: a `.conflist` is a list
 * (NetworkConfFromFile: its plugins, then those of its plugin directory unless
 * `loadOnlyInlinedPlugins`), anything else one plugin made a list (ConfListFromConf).
 */
export function libcniLoad(name: string, bytes: Uint8Array, pluginDir: PluginDir): LibcniLoad {
  const parsed = goJson(bytes);
  if ("error" in parsed) return { ok: false, error: parsed.error };
  if (!name.endsWith(".conflist")) {
    const bad = pluginError(parsed.value);
    return bad ? { ok: false, error: bad } : { ok: true, pluginDirPlugins: 0 };
  }
  const list = parseList(parsed.value);
  if ("error" in list) return { ok: false, error: list.error };
  if (!list.pluginDir) return { ok: true, pluginDirPlugins: 0 };
  const files = pluginDir(list.name) ?? [];
  for (const f of files) {
    const p = f.bytes ? goJson(f.bytes) : { error: "cannot be read" };
    const bad = "error" in p ? p.error : pluginError(p.value);
    if (bad) {
      return { ok: false, error: `plugin file "${f.name}" of network "${list.name}": ${bad}` };
    }
  }
  if (list.inline + files.length === 0) return { ok: false, error: "no plugin configs found" };
  return { ok: true, pluginDirPlugins: files.length };
}
