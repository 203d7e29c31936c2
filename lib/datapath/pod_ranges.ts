/**
 * Kubelet connects that found no target, the codec side: the pod ranges of
 * Lace networks (an LPM trie: the operator's --pod-cidrs and the addresses of
 * the pods the agent knows), the per-network counts, and the reports the
 * datapath sends through its ring buffer. Byte layouts mirror bpf/lace.h
 * (tests/bpf_layout_test.ts checks them through the object's BTF). Pure.
 */
import { addressFromBytes, type Family, parseAddress } from "../net/address.ts";
import { type PodRange, rangeId, rangeText } from "../net/cidr.ts";
import type { ProbeKey } from "../probe/key.ts";
import { AF_INET, AF_INET6, type StructLayout } from "./probe_map.ts";

/** struct lace_range_key: prefixlen u32, family u8, addr u8[16] (padded to 24). */
export const RANGE_KEY_LAYOUT = {
  size: 24,
  fields: {
    prefixlen: { offset: 0, size: 4 },
    family: { offset: 4, size: 1 },
    addr: { offset: 5, size: 16 },
  },
} as const satisfies StructLayout;
/** struct lace_range_value: network_id u16, flags u16. */
export const RANGE_VALUE_LAYOUT = {
  size: 4,
  fields: { network_id: { offset: 0, size: 2 } },
} as const satisfies StructLayout;
/** struct lace_network_counts: tagged u64, unmatched u64. */
export const NETWORK_COUNTS_LAYOUT = {
  size: 16,
  fields: { tagged: { offset: 0, size: 8 }, unmatched: { offset: 8, size: 8 } },
} as const satisfies StructLayout;
/** struct lace_unmatched_report: family u8, pad, port __be16, network_id u16, pad, addr u8[16]. */
export const REPORT_LAYOUT = {
  size: 24,
  fields: {
    family: { offset: 0, size: 1 },
    port: { offset: 2, size: 2 },
    network_id: { offset: 4, size: 2 },
    addr: { offset: 8, size: 16 },
  },
} as const satisfies StructLayout;
/** LACE_MAX_NETWORKS: the network_counts array's size. */
export const MAX_NETWORKS = 65536;
/** LACE_MAX_RANGES: the pod_ranges trie's capacity. */
export const MAX_RANGES = 65536;

/** Encodes a range as the trie's key: the family byte counts 8 bits of the prefix. */
export function encodeRangeKey(r: PodRange): Uint8Array {
  const { prefixlen, family, addr } = RANGE_KEY_LAYOUT.fields;
  const out = new Uint8Array(RANGE_KEY_LAYOUT.size);
  new DataView(out.buffer).setUint32(prefixlen.offset, 8 + r.prefix, true);
  out[family.offset] = r.family === "ipv4" ? AF_INET : AF_INET6;
  out.set(parseAddress(r.address).bytes, addr.offset);
  return out;
}

/** Decodes a trie key and value back into a range. */
export function decodeRange(key: Uint8Array, value: Uint8Array): PodRange {
  const { prefixlen, family: fam, addr } = RANGE_KEY_LAYOUT.fields;
  const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
  const family: Family = key[fam.offset] === AF_INET ? "ipv4" : "ipv6";
  const bytes = key.subarray(addr.offset, addr.offset + (family === "ipv4" ? 4 : 16));
  return {
    family,
    address: addressFromBytes(family, bytes),
    prefix: view.getUint32(prefixlen.offset, true) - 8,
    networkId: new DataView(value.buffer, value.byteOffset, value.byteLength).getUint16(0, true),
  };
}

/** Encodes a range's value: its network id. */
export function encodeRangeValue(r: PodRange): Uint8Array {
  const out = new Uint8Array(RANGE_VALUE_LAYOUT.size);
  new DataView(out.buffer).setUint16(
    RANGE_VALUE_LAYOUT.fields.network_id.offset,
    r.networkId,
    true,
  );
  return out;
}

/** One kubelet connect into a pod range that matched no target. */
export interface UnmatchedReport {
  key: ProbeKey;
  networkId: number;
}

/** Decodes one ring buffer record; throws a RangeError on a short or unknown record. */
export function decodeReport(bytes: Uint8Array): UnmatchedReport {
  if (bytes.length < REPORT_LAYOUT.size) {
    throw new RangeError(`Report must be ${REPORT_LAYOUT.size} bytes, got ${bytes.length}`);
  }
  const { family: fam, port, network_id, addr } = REPORT_LAYOUT.fields;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const af = bytes[fam.offset];
  if (af !== AF_INET && af !== AF_INET6) throw new RangeError(`Unknown address family ${af}`);
  const family: Family = af === AF_INET ? "ipv4" : "ipv6";
  return {
    key: {
      family,
      address: addressFromBytes(family, bytes.subarray(addr.offset, addr.offset + 16)),
      port: view.getUint16(port.offset, false),
    },
    networkId: view.getUint16(network_id.offset, true),
  };
}

/**
 * Decodes one network's counts. The program counts each connect once, as
 * tagged or as unmatched (one atomic add per connect); its connects are both.
 */
export function decodeNetworkCounts(bytes: Uint8Array): { connects: bigint; unmatched: bigint } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tagged = view.getBigUint64(NETWORK_COUNTS_LAYOUT.fields.tagged.offset, true);
  const unmatched = view.getBigUint64(NETWORK_COUNTS_LAYOUT.fields.unmatched.offset, true);
  return { connects: tagged + unmatched, unmatched };
}

/** What to write and remove so the trie holds exactly `want`. */
export function diffRanges(have: PodRange[], want: PodRange[]): {
  put: PodRange[];
  remove: PodRange[];
} {
  const haveIds = new Map(have.map((r) => [rangeId(r), r]));
  const wantIds = new Map(want.map((r) => [rangeId(r), r]));
  const wantPrefixes = new Set(want.map(rangeText));
  return {
    put: [...wantIds].filter(([id]) => !haveIds.has(id)).map(([, r]) => r),
    // A range whose network changed is overwritten by its put, not removed after it.
    remove: [...haveIds].filter(([id, r]) => !wantIds.has(id) && !wantPrefixes.has(rangeText(r)))
      .map(([, r]) => r),
  };
}
