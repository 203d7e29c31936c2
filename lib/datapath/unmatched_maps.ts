/**
 * The datapath's maps for kubelet connects that found no target: the pod
 * ranges trie the agent fills, the per-network counts the program keeps, and
 * the ring buffer of reports. Absent from objects older than these maps.
 */
import type { BpfMap } from "./libbpf/map.ts";
import type { BpfObject } from "./libbpf/object.ts";
import { RingBufferReader } from "./libbpf/ring_buffer.ts";
import {
  decodeNetworkCounts,
  decodeRange,
  decodeReport,
  diffRanges,
  encodeRangeKey,
  encodeRangeValue,
  type PodRange,
  type UnmatchedReport,
} from "./pod_ranges.ts";

/** Connects into one network: all the kubelet's, and those that matched no target. */
export interface NetworkCounts {
  connects: bigint;
  unmatched: bigint;
}

export class UnmatchedMaps {
  readonly #ranges: BpfMap;
  readonly #counts: BpfMap;
  readonly #reports: BpfMap;

  private constructor(ranges: BpfMap, counts: BpfMap, reports: BpfMap) {
    this.#ranges = ranges;
    this.#counts = counts;
    this.#reports = reports;
  }

  /** The object's maps, or undefined when it predates them. */
  static of(object: BpfObject): UnmatchedMaps | undefined {
    if (!["pod_ranges", "network_counts", "reports"].every((n) => object.hasMap(n))) {
      return undefined;
    }
    return new UnmatchedMaps(
      object.map("pod_ranges"),
      object.map("network_counts"),
      object.map("reports"),
    );
  }

  /** The ranges in the trie now. */
  ranges(): PodRange[] {
    return this.#ranges.entries().map(([k, v]) => decodeRange(k, v));
  }

  /** Makes the trie hold exactly `want`; returns how many entries were written and removed. */
  syncRanges(want: PodRange[]): { put: number; removed: number } {
    const { put, remove } = diffRanges(this.ranges(), want);
    for (const r of put) this.#ranges.update(encodeRangeKey(r), encodeRangeValue(r));
    for (const r of remove) this.#ranges.delete(encodeRangeKey(r));
    return { put: put.length, removed: remove.length };
  }

  /** Each network's counts (network 0: ranges of no known network). */
  networkCounts(networkIds: Iterable<number>): Map<number, NetworkCounts> {
    const out = new Map<number, NetworkCounts>();
    for (const id of networkIds) {
      const key = new Uint8Array(4);
      new DataView(key.buffer).setUint32(0, id, true);
      const value = this.#counts.lookup(key);
      if (value) out.set(id, decodeNetworkCounts(value));
    }
    return out;
  }

  /** A reader of the report ring buffer; records it cannot decode go to `onError`. */
  reportReader(
    onReport: (report: UnmatchedReport) => void,
    onError: (error: unknown) => void,
  ): RingBufferReader {
    return new RingBufferReader(this.#reports, (record) => {
      try {
        onReport(decodeReport(record));
      } catch (error) {
        onError(error);
      }
    });
  }
}
