/**
 * Removes the pinned probe maps' entries at some addresses, on every port and for every network,
 * without the agent: what the CNI plugin does at an ADD the agent does not answer
 * (cni/plugin.ts). While the agent is down the map keeps what it wrote last, so an address a
 * deleted pod freed and the node gave to a pod of another network would keep the old network's
 * mark until the agent's first full pod list; without its entries the kubelet's probes there are
 * tagged for no network (they fail; the pod still starts) until the agent writes what belongs.
 *
 * It runs in a plugin process, which loads it only on that ADD (cni/plugin.ts): the map opened by
 * its pin through the libbpf wrappers (one bpf_obj_get, a key walk, the deletes) and read with
 * the map's codec, no Kubernetes client. The pins are trusted as the agent trusts its own: the
 * pin path and each layout directory root's alone (os/root_dir.ts), each pin a file (not a link)
 * root owns, holding a hash map with the probe key (layout.ts).
 */
import { join } from "node:path";
import { canonicalAddress, parseAddress } from "../net/address.ts";
import { judgeRootFile, sharedDirProblem } from "../os/root_dir.ts";
import { BpfMap } from "../libbpf/mod.ts";
import { keyId, type ProbeKey } from "../probe/key.ts";
import { parseLayoutDir, PROBE_MAP_PIN, probeMapCodecFits } from "./layout.ts";
import { AF_INET, AF_INET6, decodeKey, KEY_LAYOUT } from "./probe_map.ts";

/** What a purge did: the maps it read with the keys it removed, and what it could not use. */
export interface PurgeReport {
  /** Each map read, with the keys removed from it, sorted (keyId: "10.0.0.5:8080", "[fd00::5]:9000"). */
  maps: { path: string; removed: string[] }[];
  /** Why the pin path, a layout directory or a pin was not used (empty: every one was). */
  problems: string[];
}

/** Removes the entries at `addresses` from the map pinned at `path`; see purgePinnedMap. */
export type PurgeMap = (path: string, addresses: ReadonlySet<string>) => ProbeKey[];

/**
 * Removes every entry at `addresses` (any form; compared canonically, both families) from each
 * probe map pinned under `pinPath` that may be trusted (probeMapPins). Never throws: what could
 * not be done is in the report's problems. `owner` is root's uid (this process's); `purge` is the
 * kernel step (a fake in unit tests).
 */
export function purgeAddresses(
  pinPath: string,
  addresses: readonly string[],
  o: { owner?: number; purge?: PurgeMap } = {},
): PurgeReport {
  const wanted = new Set<string>();
  for (const a of addresses) {
    try {
      wanted.add(canonicalAddress(a).address);
    } catch { /* not an address: no entry can be at it */ }
  }
  const report: PurgeReport = { maps: [], problems: [] };
  let pins: string[];
  try {
    ({ pins, problems: report.problems } = probeMapPins(pinPath, o.owner));
  } catch (e) {
    return { maps: [], problems: [`cannot read pin path "${pinPath}": ${(e as Error).message}`] };
  }
  for (const path of pins) {
    try {
      const removed = (o.purge ?? purgePinnedMap)(path, wanted);
      report.maps.push({ path, removed: removed.map(keyId).sort() });
    } catch (e) {
      report.problems.push((e as Error).message);
    }
  }
  return report;
}

/**
 * The probe map pins under `pinPath` root may trust (every layout's, and the flat one of the
 * release before layouts), and why any other is not used: a pin path or layout directory that
 * someone other than root could change (sharedDirProblem: root's, writable by no one else, every
 * parent safe from a rename; others may read it), a pin root may not trust as a file of its own
 * (judgeRootFile: a link, not a file, another user's, or writable by others). A layout
 * directory without the map has none.
 */
export function probeMapPins(
  pinPath: string,
  owner: number = Deno.uid() ?? 0,
): { pins: string[]; problems: string[] } {
  try {
    Deno.lstatSync(pinPath);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    return { pins: [], problems: [`no pin path "${pinPath}": the agent has not run on this node`] };
  }
  const problems: string[] = [];
  const refused = (what: string, path: string) => {
    const why = sharedDirProblem(path, owner);
    if (why) problems.push(`${what} "${path}" ${why}`);
    return why !== undefined;
  };
  if (refused("pin path", pinPath)) return { pins: [], problems };
  const candidates = [join(pinPath, PROBE_MAP_PIN)];
  for (const e of Deno.readDirSync(pinPath)) {
    if (!e.isDirectory || parseLayoutDir(e.name) === undefined) continue;
    const dir = join(pinPath, e.name);
    if (!refused("layout directory", dir)) candidates.push(join(dir, PROBE_MAP_PIN));
  }
  const pins: string[] = [];
  for (const path of candidates) {
    let stat: Deno.FileInfo;
    try {
      stat = Deno.lstatSync(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) continue;
      throw e;
    }
    const why = judgeRootFile(stat, owner);
    if (why) problems.push(`pin "${path}" ${why}`);
    else pins.push(path);
  }
  if (pins.length === 0 && problems.length === 0) {
    problems.push(`no probe map pinned under "${pinPath}"`);
  }
  return { pins, problems };
}

/**
 * Removes the entries at `addresses` (canonical) from the probe map pinned at `path`, after
 * checking that it is a map with the probe key's layout, and returns their keys. The map is read
 * whole first (batched where the kernel can: a key walk costs a system call per entry) and the
 * matches deleted after; a key is matched by its family and address bytes, decoded only when it
 * matches. Throws naming the pin and what failed.
 */
export function purgePinnedMap(path: string, addresses: ReadonlySet<string>): ProbeKey[] {
  using map = BpfMap.openPinned(path);
  if (!probeMapCodecFits(map.info)) {
    throw new TypeError(
      `the map pinned at "${path}" is no probe map (type ${map.info.type}, key ${map.info.keySize} bytes, value ${map.info.valueSize} bytes)`,
    );
  }
  const wanted = [...addresses].map((a) => {
    const { family, bytes } = parseAddress(a);
    return { af: family === "ipv4" ? AF_INET : AF_INET6, bytes };
  });
  const { family: af, addr } = KEY_LAYOUT.fields;
  // Offsets into the one buffer of keys: a view per key costs more than the compare.
  const { keys, keySize, count } = map.readAll();
  const doomed: Uint8Array[] = [];
  for (let at = 0; at < count * keySize; at += keySize) {
    const hit = wanted.some(({ af: family, bytes }) =>
      keys[at + af.offset] === family &&
      bytes.every((b, i) => keys[at + addr.offset + i] === b)
    );
    if (hit) doomed.push(keys.slice(at, at + keySize));
  }
  return doomed.filter((key) => map.delete(key)).map((key) => decodeKey(key));
}
