/**
 * What the cgroup follower knows and how it tells: the status it keeps, the
 * readiness /readyz derives from it, and the logs and Node events raised when
 * the status changes between two syncs. Pure apart from the log and the sink.
 */
import { getLogger } from "@logtape/logtape";
import { limitedLog } from "../log/limiter.ts";
import type { ProcessInfo } from "./kubelet_finder.ts";
import type { DistrustedKubelet } from "./kubelet_trust.ts";

const log = getLogger(["lace", "cgroup"]);

/** Where Node events go (the agent's aggregated, rate-limited Event recorder). */
export interface NodeEventSink {
  emit(type: "Normal" | "Warning", reason: string, message: string): void;
}

export interface KubeletMismatch {
  kubeletPid: number;
  kubeletComm: string;
  /** The cgroup directory the kubelet really runs in (or its raw /proc path). */
  kubeletCgroup: string;
}

/** What the follower knows now; for metrics, /readyz and logs. */
export interface FollowerStatus {
  /** As configured: a path or "auto". */
  configured: string;
  /** The cgroup directory Lace attaches to; null when unknown (auto, no kubelet). */
  path: string | null;
  attached: boolean;
  /** The inode id of the cgroup the links are attached to, when attached. */
  cgroupId: bigint | null;
  /** The kubelet process found in /proc, if any. */
  kubelet: { pid: number; comm: string; cgroup: string | null } | null;
  /** A trusted kubelet found outside the cgroup the programs are on (with auto: the one it settled on). */
  mismatch: KubeletMismatch | null;
  /**
   * Kubelet-looking processes that are not followed: in a container or pod cgroup, in another
   * mount namespace, not root, or a second kubelet elsewhere. Reported, never attached to.
   */
  otherKubelets: DistrustedKubelet[];
  /** Kubelet-looking processes beyond the MAX_LOOKALIKES listed (kubelet_finder.ts): counted only. */
  otherKubeletsNotListed: number;
  /** Processes in the cgroup (or below) that are not the kubelet: they get tagged too. */
  extraProcesses: ProcessInfo[];
  /** Why it is not attached, or the last attach failure; null when fine. */
  lastError: string | null;
}

/** A comparable text of a status (bigints included). */
export function statusKey(s: FollowerStatus): string {
  return JSON.stringify(s, (_, v) => typeof v === "bigint" ? `${v}n` : v);
}

/** Readiness in /readyz's terms: attached, and no kubelet seen elsewhere. */
export function followerReadiness(s: FollowerStatus): { ready: boolean; reasons: string[] } {
  const reasons: string[] = [];
  if (!s.attached) reasons.push(s.lastError ?? "probe programs are not attached");
  if (s.mismatch) {
    reasons.push(
      `kubelet (pid ${s.mismatch.kubeletPid}) runs in cgroup "${s.mismatch.kubeletCgroup}", ` +
        `not in the configured "${s.path}"`,
    );
  }
  return { ready: reasons.length === 0, reasons };
}

/**
 * Logs and records Node events for what changed between two statuses. It
 * remembers the last attach failure it raised, so a failure that repeats
 * after a waiting spell is not raised again until an attach succeeds.
 */
export class StatusReporter {
  readonly #events: NodeEventSink | undefined;
  #lastAttachError: string | null = null;

  constructor(events?: NodeEventSink) {
    this.#events = events;
  }

  /** An attach succeeded: the next failure is news again. */
  attachSucceeded(): void {
    this.#lastAttachError = null;
  }

  /** Logs and records Node events for what changed between two statuses. */
  report(prev: FollowerStatus, next: FollowerStatus): void {
    const events = this.#events;
    if (
      next.attached &&
      (!prev.attached || prev.path !== next.path || prev.cgroupId !== next.cgroupId)
    ) {
      log.info("Probe programs attached to kubelet cgroup {cgroup} (id {cgroupId})", {
        cgroup: next.path,
        cgroupId: `${next.cgroupId}`,
      });
      events?.emit("Normal", "ProbeProgramsAttached", `Attached to kubelet cgroup "${next.path}"`);
    }
    if (!next.attached && next.lastError && next.lastError !== prev.lastError) {
      const waiting = /does not exist yet|no kubelet process found/.test(next.lastError);
      if (waiting) {
        log.warn("Not attached: {reason}", { reason: next.lastError });
      } else if (next.lastError !== this.#lastAttachError) {
        this.#lastAttachError = next.lastError;
        log.error("Not attached: {reason}", { reason: next.lastError });
        events?.emit("Warning", "ProbeAttachFailed", next.lastError);
      }
    }
    const m = next.mismatch;
    if (
      m &&
      (prev.mismatch?.kubeletPid !== m.kubeletPid ||
        prev.mismatch?.kubeletCgroup !== m.kubeletCgroup)
    ) {
      const fix = next.configured === "auto"
        ? "auto settled on that cgroup and never moves to another process: restart the agent " +
          "to follow the kubelet, or set --kubelet-cgroup (Helm value node.kubeletCgroupPath)"
        : "set --kubelet-cgroup (Helm value node.kubeletCgroupPath) to that cgroup, or to auto";
      const text = `The kubelet (pid ${m.kubeletPid}, ${m.kubeletComm}) runs in cgroup ` +
        `"${m.kubeletCgroup}", not in the kubelet cgroup "${next.path}" the programs are on: ` +
        `probes to pods in Lace networks will fail; ${fix}`;
      log.error("Kubelet cgroup mismatch: {message}", { message: text, ...m });
      events?.emit("Warning", "KubeletCgroupMismatch", text);
    } else if (!m && prev.mismatch) {
      log.info("The kubelet now runs in the configured cgroup {cgroup}", { cgroup: next.path });
    }
    const otherKey = (s: FollowerStatus) => s.otherKubelets.map((k) => k.pid).join(",");
    if (next.otherKubelets.length > 0 && otherKey(prev) !== otherKey(next)) {
      const seen = new Set(prev.otherKubelets.map((k) => k.pid));
      for (const k of next.otherKubelets.filter((k) => !seen.has(k.pid))) {
        const text = `Process ${k.pid} (${k.comm}) looks like a kubelet but is not followed: ` +
          `${k.reason}; the probe programs stay on "${next.path ?? "(no kubelet cgroup yet)"}"`;
        // Any pod can start processes that look like a kubelet, thousands of them: limited.
        limitedLog(
          log,
          "warning",
          { reason: "KubeletLookalike", namespace: "", subject: `process ${k.pid} (${k.comm})` },
          "Kubelet lookalike: {message}",
          { message: text, pid: k.pid, cgroup: k.cgroup },
        );
        events?.emit("Warning", "KubeletLookalike", text);
      }
    }
    const notListed = next.otherKubeletsNotListed;
    if (notListed > 0 && prev.otherKubeletsNotListed === 0) {
      // Once per flood (the count changes with every scan while it lasts): loud, not repeated.
      const text = `${notListed} more processes look like a kubelet than the ` +
        `${next.otherKubelets.length} listed: they are counted, not listed (only the first by ` +
        "pid are), and none is followed; a pod starting processes named kubelet by the thousand " +
        "is trying to hide the real kubelet or to flood the agent";
      log.error("Kubelet lookalikes not listed: {message}", { message: text, count: notListed });
      events?.emit("Warning", "KubeletLookalike", text);
    } else if (notListed === 0 && prev.otherKubeletsNotListed > 0) {
      log.info("Every kubelet-looking process is listed again ({count})", {
        count: next.otherKubelets.length,
      });
    }
    const extraKey = (s: FollowerStatus) => s.extraProcesses.map((p) => p.pid).join(",");
    if (next.extraProcesses.length > 0 && extraKey(prev) !== extraKey(next)) {
      const list = next.extraProcesses.map((p) => `${p.pid} (${p.comm})`).join(", ");
      const text = `Kubelet cgroup "${next.path}" also holds processes that are not the ` +
        `kubelet, and their connections to probe targets get tagged too: ${list}`;
      log.warn("Kubelet cgroup shared: {message}", { message: text });
      events?.emit("Warning", "KubeletCgroupShared", text);
    }
  }
}
