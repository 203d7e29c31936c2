/**
 * The datapath's maps for kubelet connects that found no target: the pod
 * ranges trie the agent fills with the filter in front of it, the
 * per-network counts the program keeps, and the ring buffer of reports.
 * Absent from objects older than these maps (the filter from objects older
 * than it: their program asks the trie every time).
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
import {
  AddressBits,
  computeRangeFilter,
  decodeRangeFilter,
  encodeRangeFilter,
  filterTurnedOff,
  type RangeFilter,
} from "./range_filter.ts";

/** Connects into one network: all the kubelet's, and those that matched no target. */
export interface NetworkCounts {
  connects: bigint;
  unmatched: bigint;
}

export class UnmatchedMaps {
  readonly #ranges: BpfMap;
  readonly #counts: BpfMap;
  readonly #reports: BpfMap;
  readonly #filter: BpfMap | undefined;
  readonly #addressBits = new AddressBits();

  private constructor(ranges: BpfMap, counts: BpfMap, reports: BpfMap, filter?: BpfMap) {
    this.#ranges = ranges;
    this.#counts = counts;
    this.#reports = reports;
    this.#filter = filter;
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
      object.hasMap("range_filter") ? object.map("range_filter") : undefined,
    );
  }

  /** The ranges in the trie now. */
  ranges(): PodRange[] {
    return this.#ranges.entries().map(([k, v]) => decodeRange(k, v));
  }

  /**
   * Makes the trie hold exactly `want` and the filter in front of it match;
   * returns how many trie entries were written and removed.
   */
  syncRanges(want: PodRange[]): { put: number; removed: number } {
    const { put, remove } = diffRanges(this.ranges(), want);
    const filter = this.#filter && encodeRangeFilter(computeRangeFilter(want, this.#addressBits));
    const have = this.#filter?.lookup(FILTER_KEY);
    const filterChanged = filter !== undefined && !sameBytes(have, filter);
    // A program reads the prefix, then one word of the bits, while a write copies the whole
    // value: so it turns the filter off (prefixes 0: every connect asks the trie) while the
    // bits change, and on again only after, never pairing a prefix with the other's bits. A
    // write that fails on the way leaves it off until the next sync, which finds it differs.
    if (filterChanged) {
      if (have) this.#filter!.update(FILTER_KEY, filterTurnedOff(have));
      this.#filter!.update(FILTER_KEY, filterTurnedOff(filter));
    }
    for (const r of put) this.#ranges.update(encodeRangeKey(r), encodeRangeValue(r));
    for (const r of remove) this.#ranges.delete(encodeRangeKey(r));
    if (filterChanged) this.#filter!.update(FILTER_KEY, filter);
    return { put: put.length, removed: remove.length };
  }

  /** The filter in front of the trie now; undefined for objects older than it. */
  rangeFilter(): RangeFilter | undefined {
    const value = this.#filter?.lookup(FILTER_KEY);
    return value && decodeRangeFilter(value);
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

const FILTER_KEY = new Uint8Array(4);

function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  return a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
}
