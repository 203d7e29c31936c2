/**
 * Keeps Lace's programs attached to the cgroup that really holds the kubelet.
 * One `sync()` recomputes everything from the kernel and /proc: where the
 * kubelet cgroup is (configured path or, with "auto", the cgroup of the first
 * kubelet it can trust, kept from then on), whether it exists, whether the
 * pinned links are alive, on it and running this agent's program (else
 * re-attach, which swaps the program in place or replaces dead links), whether
 * the kubelet really runs there, who else shares it, and which other
 * kubelet-looking processes exist (reported, never followed). Every change of cgroup (inotify on the
 * parent directory) and a short timer request the same sync, so a kubelet
 * restart that recreates its cgroup is followed within a second.
 * Other programs are never detached; Lace's own links are never detached here.
 */
import { getLogger } from "@logtape/logtape";
import { dirname } from "node:path";
import {
  type AttachQuery,
  describeExclusiveHolder,
  findExclusiveHolder,
  queryAttachments,
} from "./exclusive.ts";
import {
  cgroup2Mounts,
  isWithin,
  mapConfiguredCgroup,
  mapProcessCgroup,
  type MountPoint,
} from "./path.ts";
import {
  extraProcesses,
  findKubelets,
  type KubeletScan,
  type ProcessInfo,
} from "./kubelet_finder.ts";
import type { KubeletProcess } from "./kubelet_process.ts";
import { type DistrustedKubelet, judgeKubelets } from "./kubelet_trust.ts";
import {
  followerReadiness,
  type FollowerStatus,
  type NodeEventSink,
  statusKey,
  StatusReporter,
} from "./follower_status.ts";
import { kubeletMismatch, otherKubelets, placeKubelets } from "./kubelet_placement.ts";
import { nearestExisting, watchDirectory } from "./watch.ts";
import { statCgroupId } from "../os/cgroupfs.ts";
import { readMountInfo } from "../os/mountinfo.ts";
import { realTimers, type Timers } from "../time/timers.ts";
import { errorText } from "../text/error.ts";
import type { ProcFs } from "../os/proc.ts";

const log = getLogger(["lace", "cgroup"]);

/** One of Lace's pinned links, as the attacher reports it. */
export interface AttachedLink {
  program: string;
  /** The pin exists. */
  pinned: boolean;
  /** The link still points at a live cgroup. */
  alive: boolean;
  /** The cgroup it is attached to; 0n when that cgroup is gone. */
  cgroupId: bigint;
  /** The link runs this agent's program (not another release's or build's). */
  current: boolean;
}

/** The part of the datapath the follower drives (lib/datapath/loader.ts's Datapath fits). */
export interface CgroupAttacher {
  /**
   * Attaches every program to the cgroup, updating the pinned links in place
   * (so a link running another program gets this agent's) or replacing them.
   */
  attach(cgroupPath: string): unknown;
  /** Lace's pinned links and what they point at. */
  links(): AttachedLink[];
}

export interface FollowerOptions {
  /** A cgroup directory (host path) or "auto". */
  kubeletCgroup: string;
  hostCgroupRoot?: string;
  attacher: CgroupAttacher;
  events?: NodeEventSink;
  /** Period of the cheap check (stat + link info); at most 1000 ms. */
  checkIntervalMs?: number;
  /** Period of the /proc scan for the kubelet and for extra processes. */
  scanIntervalMs?: number;
  /** Seams for tests; the defaults read the real system. */
  mounts?: () => MountPoint[];
  /** The /proc the default findKubelets scans (default the real one). */
  proc?: ProcFs;
  findKubelets?: () => KubeletScan;
  extraProcesses?: (dir: string, kubeletPids: number[]) => ProcessInfo[];
  cgroupId?: (dir: string) => bigint | null;
  watch?: (dir: string, onChange: () => void) => { close(): void };
  queryAttachments?: AttachQuery;
  /** The periodic check, the burst window of inotify events and the scan interval's clock. */
  timers?: Timers;
}

export class CgroupFollower implements Disposable {
  readonly #o: Required<Omit<FollowerOptions, "events" | "hostCgroupRoot" | "proc">> & {
    events?: NodeEventSink;
    hostCgroupRoot: string;
  };
  #status: FollowerStatus;
  #listeners = new Set<(s: FollowerStatus) => void>();
  #timer: unknown;
  #started = false;
  #watcher: { dir: string; handle: { close(): void } } | undefined;
  #lastScan = -Infinity;
  #scanRequested = true;
  /** The extra-process check runs after each /proc scan and each attach. */
  #scanDue = true;
  /**
   * The kubelet-looking processes of the last /proc scan that may be the kubelet, best first,
   * and the others with their reasons: at most MAX_LOOKALIKES of them (kubelet_finder.ts), the
   * rest only counted, whatever a tenant starts.
   */
  #trusted: KubeletProcess[] = [];
  #distrusted: DistrustedKubelet[] = [];
  #lookalikesNotListed = 0;
  /** With auto: the cgroup of the first trusted kubelet; never moved to another process. */
  #autoPath: string | null = null;
  #mounts: MountPoint[] | undefined;
  #syncQueued = false;
  readonly #reporter: StatusReporter;

  constructor(options: FollowerOptions) {
    const o = {
      hostCgroupRoot: "",
      checkIntervalMs: 500,
      scanIntervalMs: 10_000,
      mounts: () => readMountInfo(),
      findKubelets: () => findKubelets(options.proc),
      extraProcesses: (dir: string, pids: number[]) =>
        extraProcesses(dir, { exclude: [...pids, Deno.pid] }),
      cgroupId: statCgroupId,
      watch: watchDirectory,
      queryAttachments,
      timers: realTimers,
      ...options,
    };
    if (o.checkIntervalMs > 1000) {
      throw new RangeError(`Cgroup check interval must be at most 1000 ms: ${o.checkIntervalMs}`);
    }
    this.#o = o;
    this.#reporter = new StatusReporter(o.events);
    this.#status = {
      configured: o.kubeletCgroup,
      path: null,
      attached: false,
      cgroupId: null,
      kubelet: null,
      mismatch: null,
      otherKubelets: [],
      otherKubeletsNotListed: 0,
      extraProcesses: [],
      lastError: "not synced yet",
    };
  }

  /** Syncs now, then keeps syncing on cgroup changes and every check interval. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.sync();
    this.#scheduleCheck();
  }

  #scheduleCheck(): void {
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#scheduleCheck();
      this.sync();
    }, this.#o.checkIntervalMs);
  }

  /** Stops watching. Leaves every attachment in place (pins outlive the agent). */
  stop(): void {
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#started = false;
    this.#watcher?.handle.close();
    this.#watcher = undefined;
  }

  [Symbol.dispose](): void {
    this.stop();
  }

  /** A copy of the current status. */
  status(): FollowerStatus {
    return structuredClone(this.#status);
  }

  /** Calls `listener` after every sync that changed the status; returns the unsubscribe. */
  onChange(listener: (s: FollowerStatus) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Readiness in /readyz's terms: attached, and no kubelet seen elsewhere. */
  readiness(): { ready: boolean; reasons: string[] } {
    return followerReadiness(this.#status);
  }

  /**
   * One full sync: find the cgroup, attach if the links are missing, dead or
   * elsewhere, look for the kubelet and for extra processes. Never throws;
   * failures land in status().lastError, the log and a Node event.
   */
  sync(): FollowerStatus {
    const prev = this.#status;
    const next: FollowerStatus = { ...this.#status, lastError: null };
    const now = this.#o.timers.now();
    // With auto and no kubelet yet, look for it more often: it is what we wait for.
    const waitingForKubelet = this.#o.kubeletCgroup === "auto" && this.#status.path === null;
    const scanEvery = waitingForKubelet
      ? Math.min(this.#o.scanIntervalMs, 2000)
      : this.#o.scanIntervalMs;
    if (this.#scanRequested || now - this.#lastScan >= scanEvery) {
      this.#scanRequested = false;
      this.#lastScan = now;
      let scan: KubeletScan = { found: [], lookalikesNotListed: 0 };
      try {
        scan = this.#o.findKubelets();
      } catch (e) {
        log.warn("Cannot scan /proc for the kubelet: {error}", { error: errorText(e) });
      }
      ({ trusted: this.#trusted, distrusted: this.#distrusted } = judgeKubelets(scan.found));
      this.#lookalikesNotListed = scan.lookalikesNotListed;
      this.#scanDue = true;
    }
    let mounts: MountPoint[] = [];
    try {
      // Mounts change rarely: read them with the /proc scan, or again after a failure,
      // so the once-a-second check stays a stat and two link lookups.
      if (this.#mounts === undefined || this.#scanDue || prev.path === null) {
        this.#mounts = this.#o.mounts();
      }
      mounts = this.#mounts;
      next.path = this.#targetPath(mounts);
    } catch (e) {
      this.#mounts = undefined;
      next.path = null;
      next.lastError = errorText(e);
    }
    const placed = placeKubelets(this.#trusted, mounts, this.#o.hostCgroupRoot);
    const kubelet = placed.find((k) => next.path !== null && isWithin(k.dir, next.path))?.k ??
      this.#trusted[0];
    next.kubelet = kubelet
      ? { pid: kubelet.pid, comm: kubelet.comm, cgroup: kubelet.cgroup }
      : null;
    if (next.path === null) {
      next.attached = false;
      next.cgroupId = null;
      next.lastError ??= "no kubelet process found in /proc: waiting for it (kubelet cgroup auto)";
      // Nothing to watch yet: the /proc scan finds the kubelet.
      this.#watch(null);
    } else {
      this.#attachIfNeeded(next.path, next);
      this.#watch(nearestExisting(dirname(next.path), (d) => this.#o.cgroupId(d) !== null));
    }
    next.mismatch = kubeletMismatch(next.path, placed, this.#o.cgroupId);
    next.otherKubelets = otherKubelets(next.path, placed, next.mismatch, this.#distrusted);
    next.otherKubeletsNotListed = this.#lookalikesNotListed;
    if (this.#scanDue && next.path !== null && next.cgroupId !== null) {
      this.#scanDue = false;
      try {
        next.extraProcesses = this.#o.extraProcesses(next.path, this.#trusted.map((k) => k.pid));
      } catch {
        next.extraProcesses = [];
      }
    } else if (next.cgroupId === null) {
      next.extraProcesses = [];
    }
    this.#status = next;
    if (statusKey(prev) !== statusKey(next)) {
      this.#reporter.report(prev, next);
      for (const l of this.#listeners) {
        try {
          l(this.status());
        } catch (e) {
          // A listener's failure must not stop the follower's timer.
          log.error("Cgroup status listener failed: {error}", { error: errorText(e) });
        }
      }
    }
    return this.status();
  }

  #targetPath(mounts: MountPoint[]): string | null {
    if (this.#o.kubeletCgroup !== "auto") {
      return mapConfiguredCgroup(this.#o.kubeletCgroup, mounts, this.#o.hostCgroupRoot);
    }
    // Settle on the first trusted kubelet's cgroup: a kubelet-looking process that shows up
    // later (while the kubelet restarts, say) is reported, never followed.
    const k = this.#trusted[0];
    if (this.#autoPath === null && k) {
      this.#autoPath = mapProcessCgroup(k.cgroup!, mounts, this.#o.hostCgroupRoot);
    }
    return this.#autoPath;
  }

  #attachIfNeeded(path: string, next: FollowerStatus): void {
    const id = this.#o.cgroupId(path);
    if (id === null) {
      next.attached = false;
      next.cgroupId = null;
      next.lastError = `kubelet cgroup "${path}" does not exist yet: waiting for it ` +
        "(is the kubelet running? is --kubelet-cgroup right?)";
      return;
    }
    let links: AttachedLink[] = [];
    try {
      links = this.#o.attacher.links();
    } catch (e) {
      log.warn("Cannot read Lace's pinned links: {error}", { error: errorText(e) });
    }
    // A link that runs another release's program is not "attached": attach() swaps it in place.
    const inPlace = links.length > 0 &&
      links.every((l) => l.pinned && l.alive && l.cgroupId === id && l.current);
    if (inPlace) {
      next.attached = true;
      next.cgroupId = id;
      this.#reporter.attachSucceeded();
      return;
    }
    try {
      this.#o.attacher.attach(path);
      next.attached = true;
      next.cgroupId = id;
      this.#reporter.attachSucceeded();
      // A recreated cgroup usually means a restarted kubelet: look again.
      this.#scanRequested = true;
      this.#scanDue = true;
    } catch (e) {
      next.attached = false;
      next.cgroupId = null;
      next.lastError = this.#explainAttachError(path, e);
    }
  }

  #explainAttachError(path: string, e: unknown): string {
    // The datapath's StandingByError (takeover.ts), by name: the follower does not import the datapath.
    if (e instanceof Error && e.name === "StandingByError") {
      return `Not attaching to kubelet cgroup "${path}": ${e.message}`;
    }
    const code = (e as { code?: string }).code;
    if (code === "EPERM") {
      try {
        const mounts = this.#o.mounts();
        const root = cgroup2Mounts(mounts, this.#o.hostCgroupRoot)
          .find((m) => isWithin(path, m.mountPoint))?.mountPoint ?? "/";
        const holder = findExclusiveHolder(path, root, this.#o.queryAttachments);
        if (holder) return describeExclusiveHolder(path, holder);
      } catch (inner) {
        log.debug("Cannot inspect cgroup attachments: {error}", { error: errorText(inner) });
      }
    }
    return `Cannot attach to kubelet cgroup "${path}": ${errorText(e)}`;
  }

  #watch(dir: string | null): void {
    if (this.#watcher?.dir === dir) return;
    this.#watcher?.handle.close();
    this.#watcher = undefined;
    if (dir === null) return;
    try {
      const handle = this.#o.watch(dir, () => this.#queueSync());
      this.#watcher = { dir, handle };
    } catch (e) {
      log.debug("Cannot watch {dir}: {error}", { dir, error: errorText(e) });
    }
  }

  /** Gathers a burst of inotify events into one sync. */
  #queueSync(): void {
    this.#scanRequested = true;
    if (this.#syncQueued) return;
    this.#syncQueued = true;
    this.#o.timers.setTimeout(() => {
      this.#syncQueued = false;
      if (this.#started) this.sync();
    }, 0);
  }
}
