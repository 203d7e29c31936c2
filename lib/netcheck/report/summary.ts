/**
 * The run's results in bounded memory: counts, the slowest successful paths,
 * up to 50 representative failures (every error class keeps a share),
 * aggregate throughput, and the asymmetry check, which holds a figure only
 * until its reverse direction arrives. Memory does not grow with the number
 * of paths; every path still reaches the streaming sinks (JSON, JUnit).
 */

import { worstP99 } from "../checks/latency.ts";
import type { NetworkMatrix } from "../checks/isolation.ts";
import type { PathResult } from "../checks/path_result.ts";

export interface Asymmetry {
  a: string;
  b: string;
  aToB: number;
  bToA: number;
  factor: number;
}

const MAX_FAILURES_SHOWN = 50;
const MAX_ASYMMETRIES_SHOWN = 50;

/** Keeps the `k` smallest items by `value`, sorted ascending. */
export class Smallest<T> {
  readonly items: T[] = [];
  constructor(readonly k: number, readonly value: (item: T) => number) {}

  add(item: T): void {
    const v = this.value(item);
    if (this.items.length === this.k && v >= this.value(this.items[this.k - 1])) return;
    let i = this.items.length;
    while (i > 0 && this.value(this.items[i - 1]) > v) i--;
    this.items.splice(i, 0, item);
    if (this.items.length > this.k) this.items.pop();
  }
}

/** Bounded sample of failures in which every error class keeps a share. */
export class FailureSample {
  readonly items: PathResult[] = [];
  readonly byClass = new Map<string, number>();

  constructor(readonly limit = MAX_FAILURES_SHOWN) {}

  add(result: PathResult): void {
    const cls = result.errorClass ?? "UNKNOWN";
    this.byClass.set(cls, (this.byClass.get(cls) ?? 0) + 1);
    if (this.items.length < this.limit) {
      this.items.push(result);
      return;
    }
    const kept = new Map<string, number>();
    for (const r of this.items) kept.set(r.errorClass!, (kept.get(r.errorClass!) ?? 0) + 1);
    let biggest = "", most = 0;
    for (const [c, n] of kept) if (n > most) [biggest, most] = [c, n];
    if ((kept.get(cls) ?? 0) + 1 >= most) return;
    const victim = this.items.findLastIndex((r) => r.errorClass === biggest);
    this.items.splice(victim, 1);
    this.items.push(result);
  }
}

/** A direction's figure waiting for its reverse (a class: see AsymmetryCheck). */
class PendingFigure {
  constructor(
    /** The pair's other node: the greater name, the map's key being the lesser. */
    readonly other: string,
    readonly from: string,
    readonly bps: number,
    public next: PendingFigure | undefined,
  ) {}
}

/**
 * Pairs up A→B and B→A figures and flags those differing by more than
 * `factor`. A waiting figure is filed under the lesser of its two node names
 * (strings the run already holds), in a short chain per node: a key string
 * made per pair ("a\0b") would be most of what the check allocates, and it
 * would live until the reverse direction comes, long enough to reach the old
 * generation.
 */
export class AsymmetryCheck {
  #pending = new Map<string, PendingFigure>();
  #count = 0;
  readonly flagged: Asymmetry[] = [];
  count = 0;

  constructor(readonly factor: number) {}

  /** Records a direction's figure; undefined means it has none (failed or skipped). */
  record(from: string, to: string, bps: number | undefined): void {
    const low = from < to ? from : to, high = from < to ? to : from;
    const head = this.#pending.get(low);
    let previous: PendingFigure | undefined;
    let other = head;
    while (other && other.other !== high) {
      previous = other;
      other = other.next;
    }
    if (!other) {
      this.#pending.set(low, new PendingFigure(high, from, bps ?? NaN, head));
      this.#count++;
      return;
    }
    if (previous) previous.next = other.next;
    else if (other.next) this.#pending.set(low, other.next);
    else this.#pending.delete(low);
    this.#count--;
    if (bps === undefined || Number.isNaN(other.bps)) return;
    const factor = Math.max(bps, other.bps) / Math.max(Math.min(bps, other.bps), 1);
    if (factor > this.factor) {
      this.count++;
      if (this.flagged.length < MAX_ASYMMETRIES_SHOWN) {
        this.flagged.push({ a: other.from, b: from, aToB: other.bps, bToA: bps, factor });
      }
    }
  }

  /** Figures still waiting for their reverse direction. */
  get pending(): number {
    return this.#count;
  }
}

export interface PhaseCounts {
  tested: number;
  passed: number;
  failed: number;
}

/** Accumulates a run's results. */
export class Summary {
  readonly connect: PhaseCounts = { tested: 0, passed: 0, failed: 0 };
  readonly bandwidth: PhaseCounts = { tested: 0, passed: 0, failed: 0 };
  readonly latency: PhaseCounts = { tested: 0, passed: 0, failed: 0 };
  readonly isolation: PhaseCounts = { tested: 0, passed: 0, failed: 0 };
  readonly mtu: PhaseCounts = { tested: 0, passed: 0, failed: 0 };
  readonly udp: PhaseCounts = { tested: 0, passed: 0, failed: 0 };
  /** Peers per node tested this round (0: all pairs) and the rotation of the sample. */
  sampling:
    | { connectivityPeers: number; bandwidthPeers: number; round: number; roundsToCover: number }
    | undefined;
  /** Same-network and cross-network results per pair of networks (with --networks). */
  networks: NetworkMatrix | undefined;
  /** The paths with the highest p99 (connect or request), highest first. */
  readonly slowestLatency = new Smallest<PathResult>(5, (r) => -worstP99(r.latency!));
  readonly failures = new FailureSample();
  readonly slowest = new Smallest<PathResult>(3, (r) => r.bitsPerSecond ?? 0);
  readonly asymmetry: AsymmetryCheck;
  /** Smallest and largest MSS seen by the mtu phase (0 when none was read). */
  minMss = 0;
  maxMss = 0;
  /** mtu phase: paths whose full-size UDP datagrams got through or were lost (unmeasured: neither). */
  readonly udpFullSize = { passed: 0, lost: 0 };
  totalBps = 0;
  measured = 0;
  minBps = Infinity;
  maxBps = 0;
  nodes: string[] = [];
  skippedNodes: { node: string; reason: string }[] = [];

  constructor(asymmetryFactor: number) {
    this.asymmetry = new AsymmetryCheck(asymmetryFactor);
  }

  add(result: PathResult): void {
    const counts = result.phase === "connect"
      ? this.connect
      : result.phase === "latency"
      ? this.latency
      : result.phase === "isolation"
      ? this.isolation
      : result.phase === "mtu"
      ? this.mtu
      : result.phase === "udp"
      ? this.udp
      : this.bandwidth;
    counts.tested++;
    if (result.ok) counts.passed++;
    else {
      counts.failed++;
      this.failures.add(result);
    }
    if (result.phase === "bandwidth" && result.bitsPerSecond !== undefined) {
      this.totalBps += result.bitsPerSecond;
      this.measured++;
      this.minBps = Math.min(this.minBps, result.bitsPerSecond);
      this.maxBps = Math.max(this.maxBps, result.bitsPerSecond);
      this.slowest.add(result);
    }
    if (result.phase === "latency" && result.latency) this.slowestLatency.add(result);
    if (result.phase === "mtu" && result.mss !== undefined) {
      this.minMss = this.minMss === 0 ? result.mss : Math.min(this.minMss, result.mss);
      this.maxMss = Math.max(this.maxMss, result.mss);
    }
    if (result.phase === "mtu" && result.udpFullSize !== undefined) {
      if (result.udpFullSize) this.udpFullSize.passed++;
      else this.udpFullSize.lost++;
    }
    if (result.phase === "bandwidth") {
      this.asymmetry.record(result.from, result.to, result.bitsPerSecond);
    }
  }

  /** Records that the bandwidth of a path was not measured (its connect failed). */
  skipBandwidth(from: string, to: string): void {
    this.asymmetry.record(from, to, undefined);
  }

  get failed(): boolean {
    return this.connect.failed > 0 || this.latency.failed > 0 || this.bandwidth.failed > 0 ||
      this.isolation.failed > 0 || this.mtu.failed > 0 || this.udp.failed > 0;
  }

  /** Mean bandwidth of the measured paths, bits/s. */
  get meanBps(): number {
    return this.measured > 0 ? this.totalBps / this.measured : 0;
  }
}
