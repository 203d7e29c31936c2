/**
 * The pieces of a layout migration the loader and takeover.ts string
 * together: the lock on the pin path, refusing pins of a layout this object
 * does not have, what the program in a link runs on (its maps, found by id,
 * and its info), copying a probe map another layout holds into this agent's,
 * and the test hook that stops an agent at a chosen step so tests can kill it
 * there.
 */
import { getLogger } from "@logtape/logtape";
import { BpfMap, type BpfObject, isErrno, programMapIds } from "../libbpf/mod.ts";
import { isPresenceDir, layoutMismatch, presenceDirName, probeMapCodecFits } from "./layout.ts";
import { describeOpeners, DirLock, lockHolders } from "./dir_lock.ts";
import { decodeInfo, type PinnedInfo, pinnedLayouts, pinnedMapId } from "./pins.ts";
import { join } from "node:path";
import { INFO_KEY_SIZE } from "./probe_map.ts";
import { keyId } from "../probe/key.ts";
import { BpfProbeStore } from "./probe_store.ts";

const log = getLogger(["lace", "datapath"]);

/** The maps a loaded program uses, as far as Lace knows them by name. */
export class RunningMaps implements Disposable {
  readonly progId: number;
  readonly probeMap: BpfMap | undefined;
  /** What its info map records; undefined when it has none or it was never written. */
  readonly info: PinnedInfo | undefined;

  private constructor(progId: number, probeMap: BpfMap | undefined, info: PinnedInfo | undefined) {
    this.progId = progId;
    this.probeMap = probeMap;
    this.info = info;
  }

  /**
   * Opens the probe map of the program with this id (by map id: the program
   * holds it even when no pin does) and reads the info map pinned beside it
   * (programs do not use the info map, so it is found by the probe map's pin).
   */
  static inspect(progId: number, pinPath: string): RunningMaps {
    let probeMap: BpfMap | undefined;
    for (const id of programMapIds(progId)) {
      const map = BpfMap.openById(id);
      if (map.info.name === "probe_targets" && !probeMap) probeMap = map;
      else map.close();
    }
    let info: PinnedInfo | undefined;
    for (const layout of probeMap ? pinnedLayouts(pinPath) : []) {
      if (pinnedMapId(join(layout.dir, "probe_targets")) !== probeMap!.info.id) continue;
      try {
        using pinned = BpfMap.openPinned(join(layout.dir, "info"));
        info = decodeInfo(pinned.lookup(new Uint8Array(INFO_KEY_SIZE)));
      } catch (e) {
        if (!isErrno(e, "ENOENT")) throw e;
      }
      break;
    }
    return new RunningMaps(progId, probeMap, info);
  }

  /** The ABI version its info records, 0 when unknown (older than any layout). */
  get abi(): number {
    return this.info?.abiVersion ?? 0;
  }

  close(): void {
    this.probeMap?.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Makes `to` hold exactly the entries of another layout's probe map `from`
 * (every key, the value fields this codec knows, the hits when both layouts
 * have them): the old program's truth, so the new program tags the same
 * connects from its first one. Returns undefined, changing nothing, when
 * this codec cannot read `from`.
 */
export function copyProbeMap(
  from: BpfMap,
  to: BpfProbeStore,
): { copied: number; removed: number } | undefined {
  if (!probeMapCodecFits(from.info)) return undefined;
  using source = new BpfProbeStore(BpfMap.openById(from.info.id));
  const entries = source.entriesWithHits();
  const wanted = new Set(entries.map((e) => keyId(e.key)));
  let removed = 0;
  for (const e of to.entries()) {
    if (!wanted.has(keyId(e.key))) {
      to.remove(e.key);
      removed++;
    }
  }
  for (const e of entries) to.put(e, e.hits);
  return { copied: entries.length, removed };
}

/** Steps of a migration where LACE_TEST_PAUSE_AT can stop the agent. */
export type PauseStep = "filled" | "swapped-one" | "swapped";

/**
 * For tests only: when LACE_TEST_PAUSE_AT names this step, logs it and
 * blocks this process for good, holding what it holds, so a test can kill it
 * there (kill -9 in the middle of a migration).
 */
export function pauseForTest(step: PauseStep): void {
  if (Deno.env.get("LACE_TEST_PAUSE_AT") !== step) return;
  log.warn("Paused at migration step {step} (LACE_TEST_PAUSE_AT)", { step });
  const never = new Int32Array(new SharedArrayBuffer(4));
  for (;;) Atomics.wait(never, 0, 0);
}

/** How long an agent waits for another one's migration step to finish. */
export const PIN_LOCK_TIMEOUT_MS = 10_000;

/**
 * The exclusive lock on the pin path, or an error naming what holds it. A
 * lock only users other than root hold is no agent's: it is refused at once,
 * naming the processes to stop, rather than waited for.
 */
export function takePinLock(pinPath: string): DirLock {
  const now = DirLock.tryTake(pinPath, "exclusive");
  if (now) return now;
  const openers = DirLock.openers(pinPath);
  if (lockHolders(openers) === "strangers") {
    throw new Error(
      `Pin path "${pinPath}" is locked, and only ${describeOpeners(openers)} ha${
        openers.length === 1 ? "s" : "ve"
      } it open, not a Lace agent (agents run as root): a descriptor opened before the ` +
        `directory was made 0700 keeps the lock; stop ${
          openers.length === 1 ? "that process" : "those processes"
        } (\`kill ${openers.map((o) => o.pid).join(" ")}\`) and start the agent again`,
    );
  }
  const lock = DirLock.tryTake(pinPath, "exclusive", PIN_LOCK_TIMEOUT_MS);
  if (!lock) {
    const holders = DirLock.openers(pinPath);
    throw new Error(
      `Pin path "${pinPath}" stayed locked for ${PIN_LOCK_TIMEOUT_MS} ms${
        holders.length ? ` (open in ${describeOpeners(holders)})` : ""
      }: check for a hung agent on this node, or a process of another user that kept the ` +
        "directory open from before it was 0700 (`lace doctor`, run as root on the host, names it)",
    );
  }
  return lock;
}

/**
 * Refuses a pin at `path` that claims this object's layout directory but
 * does not have the object's layout for `name`: such a map is never half-used.
 */
export function refuseForeignPin(path: string, name: string, object: BpfObject, abi: number): void {
  let pinned: BpfMap;
  try {
    pinned = BpfMap.openPinned(path);
  } catch (e) {
    if (isErrno(e, "ENOENT")) return;
    throw e;
  }
  using _ = pinned;
  const why = layoutMismatch(name, object.mapDefinition(name), pinned.info);
  if (why) {
    throw new Error(
      `Refusing the maps pinned under map layout ABI ${abi}: ${why}. They were made by a ` +
        "build that did not raise LACE_ABI_VERSION; remove them with `lace uninstall` " +
        "(the links keep running the old program until then)",
    );
  }
}

/**
 * Claims this agent's presence directory under the pin path and keeps it
 * locked for the agent's life: how another agent of the same layout tells
 * that the agent which put a program in the links still runs. Returns the
 * start time it is named after (the first free millisecond from now).
 */
export function claimPresence(pinPath: string): { startedAt: number; lock: DirLock } {
  for (let startedAt = Date.now();; startedAt++) {
    const dir = join(pinPath, presenceDirName(startedAt));
    try {
      Deno.mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
      if (e instanceof Deno.errors.AlreadyExists) continue;
      throw e;
    }
    const lock = DirLock.tryTake(dir, "exclusive");
    if (lock) return { startedAt, lock };
  }
}

/**
 * Whether the agent that started at `startedAt` still runs (holds its
 * presence lock; a lock only another user holds is no agent's).
 */
export function agentAlive(pinPath: string, startedAt: number): boolean {
  const dir = join(pinPath, presenceDirName(startedAt));
  try {
    return DirLock.isHeldByRoot(dir);
  } catch (e) {
    if (isErrno(e, "ENOENT")) return false;
    throw e;
  }
}

/** Removes the presence directories of agents that are gone (killed without cleaning up). */
export function removeStalePresences(pinPath: string): void {
  for (const e of Deno.readDirSync(pinPath)) {
    if (!e.isDirectory || !isPresenceDir(e.name)) continue;
    const dir = join(pinPath, e.name);
    using lock = DirLock.tryTake(dir, "exclusive");
    if (lock) Deno.removeSync(dir);
  }
}

/** Releases and removes this agent's presence directory. */
export function releasePresence(lock: DirLock): void {
  lock.close();
  try {
    Deno.removeSync(lock.path);
  } catch {
    // Gone already (lace uninstall).
  }
}
