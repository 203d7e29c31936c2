/**
 * The probe datapath's lifecycle: load the BPF object with its maps pinned
 * under a bpffs directory, attach connect4/connect6 to a cgroup through pinned
 * bpf_links, and read back links and counters. Pins outlive the agent: a new
 * start reuses the pinned maps (entries survive) and swaps the program inside
 * the pinned links (no moment without a program).
 */
import { getLogger } from "@logtape/logtape";
import { dirname, join } from "node:path";
import { bpfObjectBytes, objectSha256 } from "./bpf_object.ts";
import { BpfProbeStore } from "./bpf_probe_store.ts";
import { BpfError, isErrno } from "./libbpf/errors.ts";
import { closeFd, openDirectory } from "./libbpf/fd.ts";
import { BPF_CGROUP_INET4_CONNECT, BPF_CGROUP_INET6_CONNECT } from "./libbpf/ffi.ts";
import { BpfLink } from "./libbpf/link.ts";
import { BpfMap } from "./libbpf/map.ts";
import { BpfObject, type BpfProgram } from "./libbpf/object.ts";
import { cgroup2MountPoints, mountOf, readMountInfo } from "./mountinfo.ts";
import { ABI_VERSION, COUNTERS, type ProbeEntry } from "./probe_map.ts";

const log = getLogger(["lace", "datapath"]);

export type ProgramName = "connect4" | "connect6";

const PROGRAMS: readonly { name: ProgramName; section: string; attachType: number }[] = [
  { name: "connect4", section: "lace_connect4", attachType: BPF_CGROUP_INET4_CONNECT },
  { name: "connect6", section: "lace_connect6", attachType: BPF_CGROUP_INET6_CONNECT },
];
const MAPS = ["probe_targets", "counters", "info"] as const;
/** Every name Lace pins under its pin path, and nothing else is ever removed. */
export const PIN_NAMES: readonly string[] = [
  ...PROGRAMS.map((p) => linkPinName(p.name)),
  ...MAPS,
];
/** struct lace_info: abi_version u32, flags u32, loaded_at u64, object_sha256[32]. */
const INFO_SIZE = 48;

function linkPinName(program: ProgramName): string {
  return `link_${program}`;
}

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
}

export interface LinkStatus {
  program: ProgramName;
  pinned: boolean;
  /** Attached to a live cgroup (its id is not 0). */
  alive: boolean;
  cgroupId: bigint;
  linkId: number;
  progId: number;
  /** The link runs the program this Datapath loaded. */
  current: boolean;
}

export interface Counters {
  connect4Seen: bigint;
  connect4Tagged: bigint;
  connect6Seen: bigint;
  connect6Tagged: bigint;
  setsockoptFailed: bigint;
}

/** What the info map says about the program last attached by a loader. */
export interface PinnedInfo {
  abiVersion: number;
  loadedAt: Date;
  objectSha256: string;
}

export class Datapath implements Disposable {
  readonly pinPath: string;
  readonly store: BpfProbeStore;
  /** sha256 of the loaded object, written to the info map on attach. */
  readonly objectSha256: string;
  #object: BpfObject;
  #programs: Map<ProgramName, BpfProgram>;
  readonly #progIds = new Map<ProgramName, number>();
  #counters: BpfMap;
  #info: BpfMap;

  private constructor(pinPath: string, object: BpfObject, sha: string) {
    this.pinPath = pinPath;
    this.#object = object;
    this.objectSha256 = sha;
    this.store = new BpfProbeStore(object.map("probe_targets"));
    this.#counters = object.map("counters");
    this.#info = object.map("info");
    this.#programs = new Map(PROGRAMS.map((p) => [p.name, object.program(p.section)]));
  }

  /**
   * Loads the BPF object with its maps pinned under `pinPath`, reusing pinned
   * maps that are already there. Fails with a clear error when the pin path is
   * not on bpffs, libbpf is missing, or the kernel refuses the program.
   */
  static open(opts: DatapathOptions): Datapath {
    const pinPath = opts.pinPath.replace(/\/+$/, "") || "/";
    assertOnBpffs(pinPath);
    Deno.mkdirSync(pinPath, { recursive: true });
    const bytes = opts.object ?? bpfObjectBytes();
    const object = BpfObject.openMemory(bytes);
    try {
      for (const name of MAPS) object.setPinPath(name, join(pinPath, name));
      object.load();
      const datapath = new Datapath(pinPath, object, objectSha256(bytes));
      log.info("Loaded BPF object {sha256} with maps pinned under {pinPath}", {
        sha256: datapath.objectSha256.slice(0, 12),
        pinPath,
      });
      return datapath;
    } catch (e) {
      object.close();
      throw e;
    }
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
    const result: AttachResult = { cgroupId: id, created: [], updated: [] };
    const cgroupFd = openDirectory(cgroupPath);
    try {
      for (const { name, attachType } of PROGRAMS) {
        const prog = this.#programs.get(name)!;
        const pin = join(this.pinPath, linkPinName(name));
        using old = openPinnedLink(pin);
        if (old && this.#updateInPlace(old, prog, id)) {
          result.updated.push(name);
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
    return result;
  }

  /** Swaps the program of a live link on `cgroupId`; false when a new link is needed. */
  #updateInPlace(link: BpfLink, prog: BpfProgram, cgroupId: bigint): boolean {
    const info = link.info();
    if (info.cgroupId === 0n || info.cgroupId !== cgroupId) {
      log.info("Pinned link {link} is on cgroup id {old}, not {cgroupId}: replacing it", {
        link: link.label,
        old: String(info.cgroupId),
        cgroupId: String(cgroupId),
      });
      return false;
    }
    try {
      link.update(prog.fd);
      return true;
    } catch (e) {
      if (!isErrno(e, "ENOLINK")) throw e;
      log.info("Pinned link {link} lost its cgroup: replacing it", { link: link.label });
      return false;
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
    const sum = (slot: number): bigint => {
      const key = new Uint8Array(new Uint32Array([slot]).buffer);
      let total = 0n;
      for (const v of this.#counters.lookupPerCpu(key) ?? []) {
        total += new DataView(v.buffer, v.byteOffset, 8).getBigUint64(0, true);
      }
      return total;
    };
    return {
      connect4Seen: sum(COUNTERS.connect4Seen),
      connect4Tagged: sum(COUNTERS.connect4Tagged),
      connect6Seen: sum(COUNTERS.connect6Seen),
      connect6Tagged: sum(COUNTERS.connect6Tagged),
      setsockoptFailed: sum(COUNTERS.setsockoptFailed),
    };
  }

  /** What the info map says: the ABI and object of the last attach. */
  pinnedInfo(): PinnedInfo | undefined {
    return decodeInfo(this.#info.lookup(new Uint8Array(4)));
  }

  #writeInfo(): void {
    const out = new Uint8Array(INFO_SIZE);
    const view = new DataView(out.buffer);
    view.setUint32(0, ABI_VERSION, true);
    view.setBigUint64(8, BigInt(Date.now()), true);
    out.set(hexBytes(this.objectSha256), 16);
    this.#info.update(new Uint8Array(4), out);
  }

  /** Closes every fd; pinned maps and links stay. Safe to call twice. */
  close(): void {
    this.store.close();
    this.#counters.close();
    this.#info.close();
    this.#object.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** The id of a cgroup v2 directory: its inode number, as bpf_link_info reports it. */
export function cgroupId(path: string): bigint {
  const ino = Deno.statSync(path).ino;
  if (ino === null) throw new Error(`Cannot read the inode of cgroup "${path}"`);
  return BigInt(ino);
}

/**
 * Removes Lace's pins under `pinPath` (links detach as their last reference
 * goes) and the directory when it is left empty. Nothing else is touched.
 * Returns the paths removed.
 */
export function uninstall(pinPath: string): string[] {
  const removed: string[] = [];
  for (const name of [...PIN_NAMES, ...PROGRAMS.map((p) => `${linkPinName(p.name)}_new`)]) {
    const path = join(pinPath, name);
    if (removeIfPresent(path)) removed.push(path);
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

/** The probe targets in the pinned map, without loading anything (for `lace targets`). */
export function readPinnedTargets(pinPath: string): ProbeEntry[] {
  using store = new BpfProbeStore(openPinnedMap(pinPath, "probe_targets"));
  return store.entries();
}

/** The info map's content, without loading anything (for `lace doctor`). */
export function readPinnedInfo(pinPath: string): PinnedInfo | undefined {
  using map = openPinnedMap(pinPath, "info");
  return decodeInfo(map.lookup(new Uint8Array(4)));
}

/** One pinned link's state, without loading anything (for `lace doctor`). */
export function pinnedLinkStatus(
  pinPath: string,
  program: ProgramName,
): Omit<LinkStatus, "current"> {
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

function openPinnedMap(pinPath: string, name: string): BpfMap {
  const path = join(pinPath, name);
  try {
    return BpfMap.openPinned(path);
  } catch (e) {
    if (isErrno(e, "ENOENT")) {
      throw new Error(
        `No pinned map at "${path}": the agent has not run with --pin-path "${pinPath}" on this node`,
        { cause: e },
      );
    }
    throw e;
  }
}

function openPinnedLink(path: string): BpfLink | undefined {
  try {
    return BpfLink.openPinned(path);
  } catch (e) {
    if (isErrno(e, "ENOENT")) return undefined;
    throw e;
  }
}

function createLink(prog: BpfProgram, cgroupFd: number, attachType: number, label: string) {
  try {
    return BpfLink.create(prog.fd, cgroupFd, attachType, label);
  } catch (e) {
    if (isErrno(e, "EPERM")) {
      throw new BpfError(
        `bpf_link_create ${label}`,
        -1,
        "run as root (CAP_BPF and CAP_NET_ADMIN); if already root, this cgroup or an ancestor " +
          "holds a program attached without BPF_F_ALLOW_MULTI, which forbids more programs below it",
      );
    }
    throw e;
  }
}

/**
 * Points the pin at `path` to `link` in one step: pin beside it, then rename
 * over the old pin, so the path never lacks a link.
 */
function replacePin(link: BpfLink, path: string): void {
  const staging = `${path}_new`;
  // bpffs refuses names with a dot; "_new" is a leftover of an interrupted replace.
  removeIfPresent(staging);
  link.pin(staging);
  Deno.renameSync(staging, path);
}

/** Removes a file; false when there was none (bpffs answers EPERM, not ENOENT, for dotted names). */
function removeIfPresent(path: string): boolean {
  try {
    Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
  Deno.removeSync(path);
  return true;
}

function assertOnBpffs(pinPath: string): void {
  if (!pinPath.startsWith("/")) throw new Error(`Pin path must be absolute: "${pinPath}"`);
  const mount = mountOf(readMountInfo(), resolveExisting(pinPath));
  if (mount?.fsType !== "bpf") {
    throw new Error(
      `Pin path "${pinPath}" is not on a BPF filesystem (it is on ${
        mount?.fsType ?? "nothing"
      } at "${mount?.mountPoint ?? "?"}"): mount bpffs with \`mount -t bpf bpf /sys/fs/bpf\` ` +
        "or choose a --pin-path under a bpffs mount",
    );
  }
}

/** Checks that a path is a cgroup v2 directory and returns its cgroup id. */
function assertCgroup2(path: string): bigint {
  let stat: Deno.FileInfo;
  try {
    stat = Deno.statSync(path);
  } catch (cause) {
    if (cause instanceof Deno.errors.NotFound) {
      throw new Error(`Cgroup "${path}" does not exist: check the kubelet cgroup path`, { cause });
    }
    throw cause;
  }
  const mounts = readMountInfo();
  const mount = stat.isDirectory ? mountOf(mounts, Deno.realPathSync(path)) : undefined;
  if (mount?.fsType !== "cgroup2") {
    const v2 = cgroup2MountPoints(mounts);
    throw new Error(
      `"${path}" is not a cgroup v2 directory${
        mount ? ` (it is on ${mount.fsType} at "${mount.mountPoint}")` : ""
      }: give a directory under the cgroup2 mount (${
        v2.length ? v2.map((m) => `"${m}"`).join(", ") : "none mounted"
      })`,
    );
  }
  return cgroupId(path);
}

/** The realpath of a path, or of its nearest existing ancestor with the rest appended. */
function resolveExisting(path: string): string {
  let rest = "";
  for (let p = path;; p = dirname(p)) {
    try {
      return join(Deno.realPathSync(p), rest);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound) || p === "/") throw e;
      rest = join(p.slice(dirname(p).length + 1), rest);
    }
  }
}

function decodeInfo(bytes: Uint8Array | undefined): PinnedInfo | undefined {
  if (!bytes) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const abiVersion = view.getUint32(0, true);
  if (abiVersion === 0) return undefined; // never written
  return {
    abiVersion,
    loadedAt: new Date(Number(view.getBigUint64(8, true))),
    objectSha256: Array.from(bytes.subarray(16, 48), (b) => b.toString(16).padStart(2, "0"))
      .join(""),
  };
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
}
