/**
 * The probe datapath's lifecycle: load the BPF object with its maps pinned
 * under a bpffs directory, attach connect4/connect6 to a cgroup through pinned
 * bpf_links, and read back links and counters. Pins outlive the agent: a new
 * start reuses the pinned maps (entries survive) and swaps the program inside
 * the pinned links (no moment without a program).
 *
 * Each map layout (the object's ABI version) has its own pin directory. An
 * agent whose layout differs from the one the links run creates its maps
 * beside the old ones, fills them (from the old map when it can read it, else
 * from its first full pod list), swaps its programs through the links, then
 * removes the old layout's pins (takeover.ts). One exclusive lock on the pin
 * path serialises agents; see layout.ts's decideTakeover for who wins a race.
 */
import { getLogger } from "@logtape/logtape";
import { join } from "node:path";
import { bpfObjectBytes, objectSha256 } from "./bpf_object.ts";
import { BpfProbeStore } from "./probe_store.ts";
import { UnmatchedMaps } from "./unmatched_maps.ts";
import { createLink, updateInPlace } from "./cgroup_link.ts";
import { type BpfMap, BpfObject, type BpfProgram, closeFd, openDirectory } from "../libbpf/mod.ts";
import { assertCgroup2, assertOnBpffs, ensurePinDir } from "./mounts.ts";
import { DirLock } from "./dir_lock.ts";
import { layoutDirName, probeMapCodecFits } from "./layout.ts";
import {
  claimPresence,
  pauseForTest,
  PIN_LOCK_TIMEOUT_MS,
  refuseForeignPin,
  releasePresence,
  removeStalePresences,
  takePinLock,
} from "./migration.ts";
import { objectAbiVersion } from "./object_abi.ts";
import {
  type Counters,
  decodeInfo,
  encodeInfo,
  linkPinName,
  MAP_NAMES,
  openPinnedLink,
  pathExists,
  type PinnedInfo,
  type PinnedLinkStatus,
  pinnedLinkStatus,
  pinnedMapId,
  type ProgramName,
  PROGRAMS,
  readCounters,
  removeIfPresent,
  replacePin,
} from "./pins.ts";
import { INFO_KEY_SIZE } from "./probe_map.ts";
import { LayoutTakeover } from "./takeover.ts";

const log = getLogger(["lace", "datapath"]);

export interface DatapathOptions {
  /** The bpffs directory for Lace's pins, e.g. /sys/fs/bpf/lace. */
  pinPath: string;
  /** The compiled object; defaults to the embedded bpf/lace.bpf.o. */
  object?: Uint8Array;
}

export interface AttachResult {
  cgroupId: bigint;
  /** Programs that got a new link (first attach, dead link, or another cgroup). */
  created: ProgramName[];
  /** Programs whose pinned link got this program in place. */
  updated: ProgramName[];
  /**
   * Programs whose live link ran another program (another release's, or
   * another build's) until this attach swapped in this agent's.
   */
  replaced: { program: ProgramName; fromProgId: number }[];
}

export interface LinkStatus extends PinnedLinkStatus {
  /** The link runs the program this Datapath loaded. */
  current: boolean;
}

export class Datapath implements Disposable {
  readonly pinPath: string;
  readonly store: BpfProbeStore;
  /** Pod ranges, per-network counts and reports; undefined for objects older than them. */
  readonly unmatched: UnmatchedMaps | undefined;
  /** sha256 of the loaded object, written to the info map on attach. */
  readonly objectSha256: string;
  /** The object's map layout (ABI version), read from its ELF symbols. */
  readonly abi: number;
  /** This agent's start (ms), recorded in the info map: the later start wins a same-layout race. */
  readonly startedAt: number;
  /** Where this layout's maps are pinned: <pin path>/abi<N>. */
  readonly layoutDir: string;
  #object: BpfObject;
  #programs: Map<ProgramName, BpfProgram>;
  readonly #progIds = new Map<ProgramName, number>();
  #counters: BpfMap;
  #info: BpfMap;
  /** A shared lock on layoutDir for this agent's life: says an agent runs this layout. */
  #liveness: DirLock | undefined;
  /** This agent's own presence lock (<pin path>/agent_<startedAt>): says this agent runs. */
  #presence: DirLock | undefined;
  readonly #takeover: LayoutTakeover;

  private constructor(
    pinPath: string,
    layout: { abi: number; dir: string; liveness: DirLock },
    presence: { startedAt: number; lock: DirLock },
    object: BpfObject,
    sha: string,
  ) {
    this.pinPath = pinPath;
    this.abi = layout.abi;
    this.layoutDir = layout.dir;
    this.#liveness = layout.liveness;
    this.startedAt = presence.startedAt;
    this.#presence = presence.lock;
    this.#object = object;
    this.objectSha256 = sha;
    this.store = new BpfProbeStore(object.map("probe_targets"));
    this.#counters = object.map("counters");
    this.#info = object.map("info");
    this.unmatched = UnmatchedMaps.of(object);
    this.#programs = new Map(PROGRAMS.map((p) => [p.name, object.program(p.section)]));
    this.#takeover = new LayoutTakeover({
      pinPath,
      abi: this.abi,
      layoutDir: this.layoutDir,
      startedAt: this.startedAt,
      store: this.store,
    });
  }

  /**
   * Loads the BPF object with its maps pinned under `pinPath`, reusing pinned
   * maps that are already there. Fails with a clear error when the pin path is
   * not on bpffs, libbpf is missing, or the kernel refuses the program.
   */
  static open(opts: DatapathOptions): Datapath {
    const pinPath = opts.pinPath.replace(/\/+$/, "") || "/";
    assertOnBpffs(pinPath);
    // Root's alone (0700), so no local user can take its locks or touch its pins.
    ensurePinDir(pinPath, "Pin path");
    const bytes = opts.object ?? bpfObjectBytes();
    const abi = objectAbiVersion(bytes);
    const dir = join(pinPath, layoutDirName(abi));
    using _lock = takePinLock(pinPath);
    ensurePinDir(dir, "Layout directory");
    const object = BpfObject.openMemory(bytes);
    let liveness: DirLock | undefined;
    let presence: { startedAt: number; lock: DirLock } | undefined;
    try {
      removeStalePresences(pinPath);
      presence = claimPresence(pinPath);
      if (!probeMapCodecFits(object.mapDefinition("probe_targets"))) {
        throw new Error(
          `BPF object's probe map layout (${
            JSON.stringify(object.mapDefinition("probe_targets"))
          }) is not one this agent can fill: use the object of this release`,
        );
      }
      for (const name of MAP_NAMES) {
        refuseForeignPin(join(dir, name), name, object, abi);
        object.setPinPath(name, join(dir, name));
      }
      object.load();
      liveness = DirLock.tryTake(dir, "shared", PIN_LOCK_TIMEOUT_MS);
      if (!liveness) throw new Error(`Cannot take a shared lock on "${dir}"`);
      const datapath = new Datapath(
        pinPath,
        { abi, dir, liveness },
        presence,
        object,
        objectSha256(bytes),
      );
      log.info("Loaded BPF object {sha256} (map layout ABI {abi}) with maps pinned under {dir}", {
        sha256: datapath.objectSha256.slice(0, 12),
        abi,
        dir,
      });
      return datapath;
    } catch (e) {
      liveness?.close();
      if (presence) releasePresence(presence.lock);
      object.close();
      throw e;
    }
  }

  /**
   * Tells the datapath its probe map now holds the agent's own desired state
   * (the first full pod list is applied): from now on it may swap its program
   * in even over a layout whose map it could not copy.
   */
  desiredStateApplied(): void {
    this.#takeover.desiredStateApplied();
  }

  /** Why this agent leaves the links to another agent's program, or undefined. */
  get standingBy(): string | undefined {
    return this.#takeover.standingBy;
  }

  /**
   * Attaches connect4 and connect6 to a cgroup v2 directory through pinned
   * links. A live pinned link on the same cgroup gets the new program in
   * place; a dead one, or one on another cgroup, is replaced by a new link
   * (the old one detaches when its pin goes). Other programs on the cgroup
   * are never touched.
   */
  attach(cgroupPath: string): AttachResult {
    const id = assertCgroup2(cgroupPath);
    const result: AttachResult = { cgroupId: id, created: [], updated: [], replaced: [] };
    using _lock = takePinLock(this.pinPath);
    // Each other program in the links (two after a migration interrupted between the swaps).
    const foreign = new Set(
      this.links().filter((l) => l.alive && l.cgroupId === id && !l.current).map((l) => l.progId),
    );
    for (const progId of foreign) this.#takeover.prepare(progId);
    this.#ensurePinned();
    const cgroupFd = openDirectory(cgroupPath);
    try {
      for (const { name, attachType } of PROGRAMS) {
        if (result.replaced.length === 1) pauseForTest("swapped-one");
        const prog = this.#programs.get(name)!;
        const pin = join(this.pinPath, linkPinName(name));
        using old = openPinnedLink(pin);
        const before = old?.info().progId;
        if (old && updateInPlace(old, prog, id)) {
          result.updated.push(name);
          if (before !== this.#progId(name)) {
            result.replaced.push({ program: name, fromProgId: before ?? 0 });
            log.warn(
              "Link {link} ran program id {from}, not this agent's: swapped in program id {to} " +
                "(object sha256 {sha256}) in place",
              { link: old.label, from: before, to: this.#progId(name), sha256: this.objectSha256 },
            );
          }
          continue;
        }
        using link = createLink(prog, cgroupFd, attachType, `${name} on "${cgroupPath}"`);
        replacePin(link, pin);
        result.created.push(name);
      }
    } finally {
      closeFd(cgroupFd);
    }
    this.#writeInfo();
    log.info("Attached {programs} to {cgroup} (cgroup id {cgroupId}): new links {created}", {
      programs: PROGRAMS.map((p) => p.name),
      cgroup: cgroupPath,
      cgroupId: String(id),
      created: result.created,
    });
    if (this.links().every((l) => l.current)) this.#takeover.removeOtherLayouts();
    return result;
  }

  /** Pins this agent's maps in its layout directory again if a newer agent removed them. */
  #ensurePinned(): void {
    const maps = { probe_targets: this.store.map, counters: this.#counters, info: this.#info };
    if (!pathExists(this.layoutDir)) {
      ensurePinDir(this.layoutDir, "Layout directory");
      this.#liveness?.close();
      this.#liveness = DirLock.tryTake(this.layoutDir, "shared", PIN_LOCK_TIMEOUT_MS);
    }
    for (const name of MAP_NAMES) {
      const path = join(this.layoutDir, name);
      const pinned = pinnedMapId(path);
      if (pinned === maps[name].info.id) continue;
      if (pinned !== undefined) removeIfPresent(path);
      maps[name].pin(path);
      log.info("Pinned map {name} again at {path}", { name, path });
    }
  }

  /** The state of both pinned links, as the kernel reports it. */
  links(): LinkStatus[] {
    return PROGRAMS.map(({ name }) => {
      const status = pinnedLinkStatus(this.pinPath, name);
      const progId = this.#progId(name);
      return { ...status, current: status.pinned && status.progId === progId };
    });
  }

  /** A loaded program's id; it never changes, so it is asked once. */
  #progId(name: ProgramName): number {
    let id = this.#progIds.get(name);
    if (id === undefined) this.#progIds.set(name, id = this.#programs.get(name)!.info().id);
    return id;
  }

  /** The per-CPU counters, summed over CPUs. */
  counters(): Counters {
    return readCounters(this.#counters);
  }

  /** What the info map says: the ABI and object of the last attach. */
  pinnedInfo(): PinnedInfo | undefined {
    return decodeInfo(this.#info.lookup(new Uint8Array(INFO_KEY_SIZE)));
  }

  #writeInfo(): void {
    this.#info.update(
      new Uint8Array(INFO_KEY_SIZE),
      encodeInfo(this.objectSha256, this.abi, this.startedAt),
    );
  }

  /** Closes every fd; pinned maps and links stay. Safe to call twice. */
  close(): void {
    this.#liveness?.close();
    this.#liveness = undefined;
    if (this.#presence) releasePresence(this.#presence);
    this.#presence = undefined;
    this.store.close();
    this.#counters.close();
    this.#info.close();
    this.#object.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
