/**
 * The datapath's maps for kubelet connects that found no target: the pod
 * ranges trie the agent fills with the filter in front of it, the
 * per-network counts the program keeps, and the ring buffer of reports.
 * Absent from objects older than these maps (the filter from objects older
 * than it: their program asks the trie every time).
 */
import { type BpfMap, type BpfObject, RingBufferReader } from "../libbpf/mod.ts";
import {
  decodeNetworkCounts,
  decodeRange,
  decodeReport,
  diffRanges,
  encodeRangeKey,
  encodeRangeValue,
  type UnmatchedReport,
} from "./pod_ranges.ts";
import type { PodRange } from "../net/cidr.ts";
import {
  AddressBits,
  computeRangeFilter,
  decodeRangeFilter,
  filterWrites,
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
    // The new filter goes into the slot the program does not read, the old one stays in front
    // while the trie changes, and the flip puts the new one there (bpf/lace.h says why two
    // slots). Meanwhile a connect into a range in both sets passes either filter; one into a
    // range coming or going is counted or not as if it came before or after the change. A
    // write that fails leaves the old filter in front: the next sync finds it differs.
    const writes = this.#filter &&
      filterWrites(this.#filter.lookup(FILTER_KEY), computeRangeFilter(want, this.#addressBits));
    if (writes) this.#filter!.update(FILTER_KEY, writes.fill);
    for (const r of put) this.#ranges.update(encodeRangeKey(r), encodeRangeValue(r));
    for (const r of remove) this.#ranges.delete(encodeRangeKey(r));
    if (writes) this.#filter!.update(FILTER_KEY, writes.flip);
    return { put: put.length, removed: remove.length };
  }

  /** The filter in front of the trie now (the slot the program reads); undefined for objects older than it. */
  rangeFilter(): RangeFilter | undefined {
    const value = this.#filter?.lookup(FILTER_KEY);
    if (!value) return undefined;
    const { active, slots } = decodeRangeFilter(value);
    return slots[active];
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
