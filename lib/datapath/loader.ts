/**
 * The probe datapath's lifecycle: load the BPF object with its maps pinned
 * under a bpffs directory, attach connect4/connect6 to a cgroup through pinned
 * bpf_links, and read back links and counters. Pins outlive the agent: a new
 * start reuses the pinned maps (entries survive) and swaps the program inside
 * the pinned links (no moment without a program).
 */
import { getLogger } from "@logtape/logtape";
import { join } from "node:path";
import { bpfObjectBytes, objectSha256 } from "./bpf_object.ts";
import { BpfProbeStore } from "./probe_store.ts";
import { BpfError, Errno, isErrno } from "./libbpf/errors.ts";
import { closeFd, openDirectory } from "./libbpf/fd.ts";
import { BpfLink } from "./libbpf/link.ts";
import type { BpfMap } from "./libbpf/map.ts";
import { BpfObject, type BpfProgram } from "./libbpf/object.ts";
import { assertCgroup2, assertOnBpffs } from "./mounts.ts";
import {
  type Counters,
  decodeInfo,
  encodeInfo,
  linkPinName,
  MAP_NAMES,
  openPinnedLink,
  type PinnedInfo,
  type PinnedLinkStatus,
  pinnedLinkStatus,
  type ProgramName,
  PROGRAMS,
  readCounters,
  replacePin,
} from "./pins.ts";
import { INFO_KEY_SIZE } from "./probe_map.ts";

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
      for (const name of MAP_NAMES) object.setPinPath(name, join(pinPath, name));
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
    const result: AttachResult = { cgroupId: id, created: [], updated: [], replaced: [] };
    const cgroupFd = openDirectory(cgroupPath);
    try {
      for (const { name, attachType } of PROGRAMS) {
        const prog = this.#programs.get(name)!;
        const pin = join(this.pinPath, linkPinName(name));
        using old = openPinnedLink(pin);
        const before = old?.info().progId;
        if (old && this.#updateInPlace(old, prog, id)) {
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
    return readCounters(this.#counters);
  }

  /** What the info map says: the ABI and object of the last attach. */
  pinnedInfo(): PinnedInfo | undefined {
    return decodeInfo(this.#info.lookup(new Uint8Array(INFO_KEY_SIZE)));
  }

  #writeInfo(): void {
    this.#info.update(new Uint8Array(INFO_KEY_SIZE), encodeInfo(this.objectSha256));
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

function createLink(prog: BpfProgram, cgroupFd: number, attachType: number, label: string) {
  try {
    return BpfLink.create(prog.fd, cgroupFd, attachType, label);
  } catch (e) {
    if (isErrno(e, "EPERM")) {
      throw new BpfError(
        `bpf_link_create ${label}`,
        -Errno.EPERM,
        "run as root (CAP_BPF and CAP_NET_ADMIN); if already root, this cgroup or an ancestor " +
          "holds a program attached without BPF_F_ALLOW_MULTI, which forbids more programs below it",
      );
    }
    throw e;
  }
}
