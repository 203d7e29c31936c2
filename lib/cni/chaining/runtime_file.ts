/**
 * The file of the CNI configuration directory the container runtime really uses, by its own
 * rule. Both list the `.conf`, `.conflist` and `.json` names in byte order (libcni's
 * ConfFiles, sorted), and then:
 * - containerd (go-cni's loadFromConfDir, one network by default) loads the first and fails
 *   on it: when the first file does not load, it uses no configuration at all;
 * - CRI-O (ocicni's loadNetworks) skips every file that does not load and uses the first that
 *   does (its `cni_default_network` setting aside, which the agent cannot see; it also skips a
 *   file whose plugins are missing from its plugin directory, which the agent does not check).
 * An unknown runtime gets CRI-O's rule: where the two differ, containerd uses nothing, so the
 * file CRI-O would use is the only one worth chaining.
 */
import { join } from "node:path";
import { byteOrder } from "./select.ts";
import { isLibcniConfName, type LibcniLoad, libcniLoad, type PluginFile } from "./libcni.ts";
import { MAX_CONFIG_BYTES } from "./conflist.ts";
import { type ReadCache, readConfig } from "./file_read.ts";
import { type ContainerRuntime, runtimeName } from "./runtimes.ts";

/** A name of the directory and how to load it (called only for the names a rule looks at). */
export interface Candidate {
  name: string;
  load(): LibcniLoad;
}

/** The file the runtime uses, the files it skipped on the way, or why it uses none. */
export interface RuntimeChoice {
  file?: string;
  /** Files before `file` that the runtime skips (CRI-O), with libcni's reason. */
  skipped: { name: string; error: string }[];
  /** The file's network also takes plugins from its plugin directory, after the file's own. */
  pluginDir?: boolean;
  /** Why the runtime uses no file; absent when it uses one or the directory holds none. */
  none?: string;
}

/** Applies `runtime`'s rule (see the module comment) to the directory's `candidates`. */
export function chooseRuntimeFile(
  runtime: ContainerRuntime | undefined,
  candidates: Candidate[],
): RuntimeChoice {
  const sorted = candidates.filter((c) => isLibcniConfName(c.name))
    .sort((a, b) => byteOrder(a.name, b.name));
  const skipped: RuntimeChoice["skipped"] = [];
  for (const c of sorted) {
    const loaded = c.load();
    if (loaded.ok) {
      return { file: c.name, skipped, ...(loaded.pluginDirPlugins ? { pluginDir: true } : {}) };
    }
    if (runtime === "containerd") {
      return {
        skipped,
        none:
          `containerd loads only the first file, "${c.name}", and fails on it (${loaded.error}): it uses no CNI configuration, so no new pod gets a network until the file is fixed or removed`,
      };
    }
    skipped.push({ name: c.name, error: loaded.error });
  }
  return sorted.length === 0 ? { skipped } : {
    skipped,
    none: `${runtimeName(runtime)} can load none of the ${sorted.length} configuration files (${
      skipped.map((s) => `"${s.name}": ${s.error}`).join("; ")
    }), so no new pod gets a network`,
  };
}

/**
 * What the runtime makes of one entry, read without blocking on a FIFO or past the limit. A file
 * the agent cannot judge (over the limit, or another user's it may not read) is taken as one the
 * runtime loads: the chaining then reports why it leaves that file alone, and chains no other.
 */
function loadEntry(dir: string, name: string, cache?: ReadCache): LibcniLoad {
  const unjudged: LibcniLoad = { ok: true, pluginDirPlugins: 0 };
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(join(dir, name));
  } catch (e) {
    return { ok: false, error: `cannot be read: ${(e as Error).message}` };
  }
  if (!info.isFile) return { ok: false, error: "not a regular file" };
  if (info.size > MAX_CONFIG_BYTES) return unjudged;
  let file: ReturnType<typeof readConfig>;
  try {
    file = readConfig(dir, name, cache);
  } catch (e) {
    return { ok: false, error: `cannot be read: ${(e as Error).message}` };
  }
  if (!file) return { ok: false, error: "gone while read" };
  if (file.bytes.length < file.size && file.unsafe) return unjudged;
  return libcniLoad(name, file.bytes, (network) => pluginFiles(dir, network, cache));
}

/** The `.conf` files of a network's plugin directory `<dir>/<network>`, as libcni reads them. */
function pluginFiles(dir: string, network: string, cache?: ReadCache): PluginFile[] | null {
  // A name that leaves the directory is not followed: its plugins are not read.
  if (network.includes("/") || network === "." || network === "..") return null;
  const sub = network === "" ? dir : join(dir, network);
  const files: PluginFile[] = [];
  try {
    for (const e of Deno.readDirSync(sub)) {
      if (e.isDirectory || !e.name.endsWith(".conf")) continue;
      const info = Deno.statSync(join(sub, e.name));
      const readable = info.isFile && info.size <= MAX_CONFIG_BYTES;
      const bytes = readable ? readConfig(sub, e.name, cache)?.bytes ?? null : null;
      files.push({ name: e.name, bytes });
    }
  } catch {
    return null;
  }
  return files;
}

/**
 * The runtime's file in the directory `dir` (already resolved), read now; `cache` spares reading
 * again what an earlier pass read (file_read.ts).
 */
export function runtimeFileIn(
  dir: string,
  runtime: ContainerRuntime | undefined,
  cache?: ReadCache,
): RuntimeChoice {
  const candidates: Candidate[] = [];
  for (const e of Deno.readDirSync(dir)) {
    // ConfFiles skips directories only: a symlink to one is listed, and fails to load.
    if (e.isDirectory) continue;
    candidates.push({ name: e.name, load: () => loadEntry(dir, e.name, cache) });
  }
  return chooseRuntimeFile(runtime, candidates);
}
