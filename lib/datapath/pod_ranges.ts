/**
 * Kubelet connects that found no target, the codec side: the pod ranges of
 * Lace networks (an LPM trie: the operator's --pod-cidrs and the addresses of
 * the pods the agent knows), the per-network counts, and the reports the
 * datapath sends through its ring buffer. Byte layouts mirror bpf/lace.h
 * (tests/bpf_layout_test.ts checks them through the object's BTF). Pure.
 */
import {
  AF_INET,
  AF_INET6,
  canonicalAddress,
  type Family,
  parseAddress,
  type ProbeKey,
  type StructLayout,
} from "./probe_map.ts";

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

/** One pod range: a CIDR of a Lace network (network 0: the operator's, network unknown). */
export interface PodRange {
  family: Family;
  /** Canonical network address (host bits zero). */
  address: string;
  prefix: number;
  networkId: number;
}

/** Parses "10.244.0.0/16" or "fd00::/64"; throws a TypeError saying what is wrong. */
export function parseCidr(text: string, networkId = 0): PodRange {
  const slash = text.indexOf("/");
  if (slash < 0) throw new TypeError(`Invalid CIDR "${text}": expected ADDRESS/PREFIX`);
  const prefixText = text.slice(slash + 1);
  let parsed: ReturnType<typeof parseAddress>;
  try {
    parsed = parseAddress(text.slice(0, slash));
  } catch {
    throw new TypeError(`Invalid CIDR "${text}": "${text.slice(0, slash)}" is not an IP address`);
  }
  const bits = parsed.family === "ipv4" ? 32 : 128;
  const prefix = Number(prefixText);
  if (!/^[0-9]{1,3}$/.test(prefixText) || prefix > bits) {
    throw new TypeError(`Invalid CIDR "${text}": the prefix must be 0..${bits}`);
  }
  const bytes = maskBytes(parsed.bytes, prefix);
  if (!bytes.every((b, i) => b === parsed.bytes[i])) {
    throw new TypeError(
      `Invalid CIDR "${text}": host bits are set (did you mean ${
        rangeText({ family: parsed.family, address: bytesToText(parsed.family, bytes), prefix })
      }?)`,
    );
  }
  return { family: parsed.family, address: bytesToText(parsed.family, bytes), prefix, networkId };
}

/**
 * Whether `address` (any textual form parseAddress reads; IPv4-mapped IPv6 as its IPv4) lies in
 * one of `ranges`. False for text that is no address.
 */
export function inRanges(address: string, ranges: readonly PodRange[]): boolean {
  return new PodRangeSet(ranges).has(address);
}

/**
 * A set of ranges asked about the same addresses again and again (every pod address at every
 * reconcile): the ranges are parsed once and each address's answer is kept, up to 65,536 of
 * them (then forgotten all at once). Parsing them at each ask cost 35 ms of a 58 ms
 * desiredState() at 5,000 pods of two addresses.
 */
export class PodRangeSet {
  readonly ranges: readonly PodRange[];
  readonly #parsed: { family: Family; bytes: Uint8Array; prefix: number }[];
  readonly #answers = new Map<string, boolean>();

  constructor(ranges: readonly PodRange[]) {
    this.ranges = ranges;
    this.#parsed = ranges.map((r) => ({ ...parseAddress(r.address), prefix: r.prefix }));
  }

  /** Whether `address` lies in one of the ranges (inRanges()). */
  has(address: string): boolean {
    const known = this.#answers.get(address);
    if (known !== undefined) return known;
    let answer = false;
    try {
      const { family, bytes } = parseAddress(address);
      answer = this.#parsed.some((r) =>
        r.family === family && maskBytes(bytes, r.prefix).every((b, i) => b === r.bytes[i])
      );
    } catch { /* not an address: in no range */ }
    if (this.#answers.size >= 65_536) this.#answers.clear();
    this.#answers.set(address, answer);
    return answer;
  }
}

/** The range of exactly one address (/32 or /128). */
export function hostRange(address: string, networkId: number): PodRange {
  const { family, address: canonical } = canonicalAddress(address);
  return { family, address: canonical, prefix: family === "ipv4" ? 32 : 128, networkId };
}

/** "10.244.0.0/16". */
export function rangeText(r: Pick<PodRange, "family" | "address" | "prefix">): string {
  return `${r.address}/${r.prefix}`;
}

/** A stable identity of a range and its network, for diffs. */
export function rangeId(r: PodRange): string {
  return `${rangeText(r)} ${r.networkId}`;
}

function maskBytes(bytes: Uint8Array, prefix: number): Uint8Array {
  return bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
}

function bytesToText(family: Family, bytes: Uint8Array): string {
  if (family === "ipv4") return Array.from(bytes.subarray(0, 4)).join(".");
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return canonicalAddress(words.join(":")).address;
}

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
    address: bytesToText(family, bytes),
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
      address: bytesToText(family, bytes.subarray(addr.offset, addr.offset + 16)),
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
