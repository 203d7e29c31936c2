/**
 * Lace's pins under its bpffs pin path: their names, reading what they hold
 * without loading anything (for `lace targets`, `lace doctor`), replacing a
 * link pin without a gap, and removing them all on uninstall. Only the names
 * listed here are ever removed.
 *
 *   <pin path>/link_connect4, link_connect6   the links: one pair, whatever the layout
 *   <pin path>/abi<N>/probe_targets, counters, info   the maps of map layout N
 *   <pin path>/probe_targets, counters, info  the maps of the release before layouts
 *                                             were versioned (layout 1), until migrated
 */
import { getLogger } from "@logtape/logtape";
import { join } from "node:path";
import { BpfProbeStore } from "./probe_store.ts";
import {
  BPF_CGROUP_INET4_CONNECT,
  BPF_CGROUP_INET6_CONNECT,
  BpfLink,
  BpfMap,
  isErrno,
  programMapIds,
} from "../libbpf/mod.ts";
import {
  COUNTER_KEY_SIZE,
  COUNTER_VALUE_SIZE,
  COUNTERS,
  INFO_KEY_SIZE,
  INFO_LAYOUT,
  type ProbeEntryWithHits,
} from "./probe_map.ts";
import type { ProbeEntry } from "../probe/key.ts";
import { isPresenceDir, parseLayoutDir, PROBE_MAP_PIN } from "./layout.ts";
import { UNVERSIONED_ABI } from "./object_abi.ts";
import { rootDirProblem } from "../os/root_dir.ts";

const log = getLogger(["lace", "datapath"]);

/**
 * Lace's programs, the one list: each is the C function `section` of
 * bpf/lace.bpf.c, attached with `attachType` through one pinned link.
 */
export const PROGRAMS = [
  { name: "connect4", section: "lace_connect4", attachType: BPF_CGROUP_INET4_CONNECT },
  { name: "connect6", section: "lace_connect6", attachType: BPF_CGROUP_INET6_CONNECT },
] as const;
export type ProgramName = (typeof PROGRAMS)[number]["name"];
/** The programs' names, in the order of PROGRAMS. */
export const PROGRAM_NAMES: readonly ProgramName[] = PROGRAMS.map((p) => p.name);
/** Lace's maps, pinned so their entries outlive the agent. */
export const MAP_NAMES = [PROBE_MAP_PIN, "counters", "info"] as const;
/** Every name Lace pins directly under its pin path, and nothing else is ever removed there. */
const PIN_NAMES: readonly string[] = [...PROGRAM_NAMES.map(linkPinName), ...MAP_NAMES];

/** One layout's maps as pinned: in abi<N>, or flat under the pin path (unversioned). */
export interface PinnedLayout {
  abi: number;
  dir: string;
  /** Pinned flat by the release before layouts were versioned. */
  unversioned: boolean;
}

/** The pin name of a program's link. */
export function linkPinName(program: ProgramName): string {
  return `link_${program}`;
}

/** What the info map says about the program last attached by a loader. */
export interface PinnedInfo {
  abiVersion: number;
  /** When the agent that attached last started (older releases: when it attached). */
  loadedAt: Date;
  objectSha256: string;
}

/** One pinned link as the kernel reports it. */
export interface PinnedLinkStatus {
  program: ProgramName;
  pinned: boolean;
  /** Attached to a live cgroup (its id is not 0). */
  alive: boolean;
  cgroupId: bigint;
  linkId: number;
  progId: number;
}

/**
 * Removes Lace's pins under `pinPath` (links detach as their last reference
 * goes) and the directory when it is left empty. Nothing else is touched.
 * Returns the paths removed.
 */
export function uninstall(pinPath: string): string[] {
  const removed: string[] = [];
  for (const name of [...PIN_NAMES, ...PROGRAM_NAMES.map((p) => `${linkPinName(p)}_new`)]) {
    const path = join(pinPath, name);
    if (removeIfPresent(path)) removed.push(path);
  }
  for (const layout of pinnedLayouts(pinPath)) removed.push(...removeLayoutPins(layout));
  // Agents' presence directories (empty; a running agent's goes too: uninstall stops Lace).
  try {
    for (const e of Deno.readDirSync(pinPath)) {
      if (!e.isDirectory || !isPresenceDir(e.name)) continue;
      Deno.removeSync(join(pinPath, e.name));
      removed.push(join(pinPath, e.name));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  try {
    Deno.removeSync(pinPath); // only succeeds when empty
    removed.push(pinPath);
  } catch {
    // Not empty (someone else's pins) or already gone: leave it.
  }
  if (removed.length) log.info("Removed pins {removed}", { removed });
  return removed;
}

/** What removeLacePins() did: the paths it removed, or why it removed nothing. */
export type PinRemoval = { removed: string[]; refused?: undefined } | { refused: string };

/**
 * Uninstalls Lace's pins, for `lace uninstall` and for an agent stopping after
 * its release is gone: uninstall(pinPath), unless the pin path is not root's
 * alone. One someone else owns, may write, or made a symlink could point
 * root's removals at another program's pins of the same names: it is refused
 * whole, never followed (one only readable by others is Lace's still).
 */
export function removeLacePins(pinPath: string): PinRemoval {
  const unsafe = rootDirProblem(pinPath, "Pin path");
  if (unsafe && !unsafe.tightenable) return { refused: unsafe.problem };
  return { removed: uninstall(pinPath) };
}

/** Every layout pinned under `pinPath`, newest first; the unversioned one counts as layout 1. */
export function pinnedLayouts(pinPath: string): PinnedLayout[] {
  const out: PinnedLayout[] = [];
  try {
    for (const e of Deno.readDirSync(pinPath)) {
      const abi = e.isDirectory ? parseLayoutDir(e.name) : undefined;
      if (abi !== undefined) out.push({ abi, dir: join(pinPath, e.name), unversioned: false });
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  if (MAP_NAMES.some((name) => pathExists(join(pinPath, name)))) {
    out.push({ abi: UNVERSIONED_ABI, dir: pinPath, unversioned: true });
  }
  return out.sort((a, b) => b.abi - a.abi || Number(a.unversioned) - Number(b.unversioned));
}

/**
 * Removes one layout's map pins (and its directory when left empty); the
 * maps go once no program uses them. Returns the paths removed.
 */
export function removeLayoutPins(layout: PinnedLayout): string[] {
  const removed = MAP_NAMES.map((name) => join(layout.dir, name)).filter(removeIfPresent);
  if (!layout.unversioned) {
    try {
      Deno.removeSync(layout.dir); // only succeeds when empty
      removed.push(layout.dir);
    } catch {
      // Not empty (nothing of Lace's) or gone: leave it.
    }
  }
  return removed;
}

/**
 * Opens one of Lace's maps as the node runs it: the map of that name used by
 * the program in the connect4 link, else the pin of the newest layout. For
 * readers (`lace targets`, `lace doctor`, tests); nothing is loaded.
 */
export function openCurrentMap(pinPath: string, name: (typeof MAP_NAMES)[number]): BpfMap {
  try {
    using link = openPinnedLink(join(pinPath, linkPinName("connect4")));
    const progId = link?.info().progId ?? 0;
    for (const id of progId ? programMapIds(progId) : []) {
      const map = BpfMap.openById(id);
      if (map.info.name === name) return map;
      map.close();
    }
  } catch (e) {
    // Opening by id needs CAP_SYS_ADMIN: without it, the pins still say where the maps are.
    if (!isErrno(e, "EPERM", "EACCES")) throw e;
  }
  const layout = pinnedLayouts(pinPath).find((l) => pathExists(join(l.dir, name)));
  return openPinnedMap(layout?.dir ?? pinPath, name);
}

/** The probe targets in the current map, without loading anything (for `lace targets`). */
export function readPinnedTargets(pinPath: string): ProbeEntry[] {
  using store = new BpfProbeStore(openCurrentMap(pinPath, "probe_targets"));
  return store.entries();
}

/** The probe targets in the current map with the datapath's hits, without loading anything. */
export function readPinnedTargetsWithHits(pinPath: string): ProbeEntryWithHits[] {
  using store = new BpfProbeStore(openCurrentMap(pinPath, "probe_targets"));
  return store.entriesWithHits();
}

/** The per-CPU counters, summed over CPUs, by name. */
export type Counters = Record<keyof typeof COUNTERS, bigint>;

/** One slot of the per-CPU counters map, summed over every CPU. */
export function readCounterSlot(map: BpfMap, slot: number): bigint {
  const key = new Uint8Array(COUNTER_KEY_SIZE);
  new DataView(key.buffer).setUint32(0, slot, true);
  let total = 0n;
  for (const v of map.lookupPerCpu(key) ?? []) {
    total += new DataView(v.buffer, v.byteOffset, COUNTER_VALUE_SIZE).getBigUint64(0, true);
  }
  return total;
}

/** Every named slot of the per-CPU counters map, each summed over every CPU. */
export function readCounters(map: BpfMap): Counters {
  const names = Object.keys(COUNTERS) as (keyof typeof COUNTERS)[];
  return Object.fromEntries(
    names.map((name) => [name, readCounterSlot(map, COUNTERS[name])]),
  ) as Counters;
}

/** The pinned counters, without loading anything (for `lace doctor`). */
export function readPinnedCounters(pinPath: string): Counters {
  using map = openCurrentMap(pinPath, "counters");
  return readCounters(map);
}

/** The info map's content, without loading anything (for `lace doctor`). */
export function readPinnedInfo(pinPath: string): PinnedInfo | undefined {
  using map = openCurrentMap(pinPath, "info");
  return decodeInfo(map.lookup(new Uint8Array(INFO_KEY_SIZE)));
}

/** One pinned link's state, without loading anything (for `lace doctor`). */
export function pinnedLinkStatus(pinPath: string, program: ProgramName): PinnedLinkStatus {
  using link = openPinnedLink(join(pinPath, linkPinName(program)));
  if (!link) {
    return { program, pinned: false, alive: false, cgroupId: 0n, linkId: 0, progId: 0 };
  }
  const info = link.info();
  return {
    program,
    pinned: true,
    alive: info.cgroupId !== 0n,
    cgroupId: info.cgroupId,
    linkId: info.id,
    progId: info.progId,
  };
}

function openPinnedMap(dir: string, name: string): BpfMap {
  const path = join(dir, name);
  try {
    return BpfMap.openPinned(path);
  } catch (e) {
    if (isErrno(e, "ENOENT")) {
      throw new Error(
        `No pinned map at "${path}": the agent has not run with this --pin-path on this node`,
        { cause: e },
      );
    }
    throw e;
  }
}

/** The id of the map pinned at `path`, or undefined when there is none. */
export function pinnedMapId(path: string): number | undefined {
  try {
    using map = BpfMap.openPinned(path);
    return map.info.id;
  } catch (e) {
    if (isErrno(e, "ENOENT")) return undefined;
    throw e;
  }
}

/** The link pinned at `path`; undefined when there is no pin. */
export function openPinnedLink(path: string): BpfLink | undefined {
  try {
    return BpfLink.openPinned(path);
  } catch (e) {
    if (isErrno(e, "ENOENT")) return undefined;
    throw e;
  }
}

/**
 * Points the pin at `path` to `link` in one step: pin beside it, then rename
 * over the old pin, so the path never lacks a link.
 */
export function replacePin(link: BpfLink, path: string): void {
  const staging = `${path}_new`;
  // bpffs refuses names with a dot; "_new" is a leftover of an interrupted replace.
  removeIfPresent(staging);
  link.pin(staging);
  Deno.renameSync(staging, path);
}

/** Whether anything (a pin, a directory) is at `path`. */
export function pathExists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Removes a file; false when there was none (bpffs answers EPERM, not ENOENT, for dotted names). */
export function removeIfPresent(path: string): boolean {
  try {
    Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
  Deno.removeSync(path);
  return true;
}

/**
 * The info map's value for an attach by an agent that started at `startedAt`
 * (ms) with the object of this sha256 and map layout `abiVersion`.
 */
export function encodeInfo(
  objectSha256: string,
  abiVersion: number,
  startedAt: number,
): Uint8Array {
  const { abi_version, loaded_at, object_sha256 } = INFO_LAYOUT.fields;
  const out = new Uint8Array(INFO_LAYOUT.size);
  const view = new DataView(out.buffer);
  view.setUint32(abi_version.offset, abiVersion, true);
  view.setBigUint64(loaded_at.offset, BigInt(startedAt), true);
  out.set(hexBytes(objectSha256), object_sha256.offset);
  return out;
}

/** The info map's value read back; undefined when it was never written. */
export function decodeInfo(bytes: Uint8Array | undefined): PinnedInfo | undefined {
  if (!bytes) return undefined;
  const { abi_version, loaded_at, object_sha256 } = INFO_LAYOUT.fields;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const abiVersion = view.getUint32(abi_version.offset, true);
  if (abiVersion === 0) return undefined; // never written
  const sha = bytes.subarray(object_sha256.offset, object_sha256.offset + object_sha256.size);
  return {
    abiVersion,
    loadedAt: new Date(Number(view.getBigUint64(loaded_at.offset, true))),
    objectSha256: Array.from(sha, (b) => b.toString(16).padStart(2, "0")).join(""),
  };
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
}
