/**
 * The probe map's layout and its key/value codec: the byte layout mirrors
 * `bpf/lace.h` exactly; the agent, the CLI and the tests all go through this
 * one codec. What a key and a value are is the vocabulary's (probe/key.ts).
 */
import { type Family, formatAddress, parseAddress } from "../net/address.ts";
import type { ProbeEntry, ProbeKey, ProbeValue } from "../probe/key.ts";

/** What the datapath saw for one target: the connects it tagged, and when the last one was. */
export interface ProbeHits {
  hits: bigint;
  /** CLOCK_MONOTONIC (coarse) of the last tagged connect, in ns; 0n when none yet. */
  lastHitNs: bigint;
}

/** A probe map entry with its hits (zero in layouts older than ABI 2, which had none). */
export interface ProbeEntryWithHits extends ProbeEntry {
  hits: ProbeHits;
}

export const AF_INET = 2;
export const AF_INET6 = 10;

/**
 * A C struct of bpf/lace.h as this codec reads and writes it: its size and
 * the byte offset and size of each field it touches, by the C field name.
 * tests/bpf_layout_test.ts checks each one against the BTF of the built object.
 */
export interface StructLayout {
  readonly size: number;
  readonly fields: Readonly<Record<string, { readonly offset: number; readonly size: number }>>;
}

/** struct lace_probe_key: family u8, pad u8, port __be16, addr u8[16]. */
export const KEY_LAYOUT = {
  size: 20,
  fields: {
    family: { offset: 0, size: 1 },
    port: { offset: 2, size: 2 },
    addr: { offset: 4, size: 16 },
  },
} as const satisfies StructLayout;
/**
 * struct lace_probe_value: mark u32, network_id u16, flags u16 (reserved),
 * hits u64, last_hit_ns u64. The agent writes the first fields (VALUE_SIZE,
 * which every layout shares); the program fills hits and last_hit_ns.
 */
export const VALUE_LAYOUT = {
  size: 24,
  fields: {
    mark: { offset: 0, size: 4 },
    network_id: { offset: 4, size: 2 },
    hits: { offset: 8, size: 8 },
    last_hit_ns: { offset: 16, size: 8 },
  },
} as const satisfies StructLayout;
/** struct lace_info: abi_version u32, flags u32, loaded_at u64, object_sha256 u8[32]. */
export const INFO_LAYOUT = {
  size: 48,
  fields: {
    abi_version: { offset: 0, size: 4 },
    loaded_at: { offset: 8, size: 8 },
    object_sha256: { offset: 16, size: 32 },
  },
} as const satisfies StructLayout;
/** The info map holds one lace_info under the u32 key 0. */
export const INFO_KEY_SIZE = 4;
export const KEY_SIZE = KEY_LAYOUT.size;
/**
 * The bytes of a probe value the agent writes (mark, network id, flags), the
 * same in every layout: a map with at least these can be read and filled.
 */
export const VALUE_SIZE = 8;
/** Must equal LACE_ABI_VERSION in bpf/lace.h. */
export const ABI_VERSION = 2;
/** Counter slots of the per-CPU counters map, as in `enum lace_counter`. */
export const COUNTERS = {
  connect4Seen: 0,
  connect4Tagged: 1,
  connect6Seen: 2,
  connect6Tagged: 3,
  setsockoptFailed: 4,
  unmatched: 5,
  reportsDropped: 6,
} as const;
/** The counters map's max_entries: LACE_CNT_MAX. */
export const COUNTER_SLOTS = 8;
/** Each counter is a u64 per CPU under a u32 key. */
export const COUNTER_KEY_SIZE = 4;
export const COUNTER_VALUE_SIZE = 8;

export function encodeKey(key: ProbeKey): Uint8Array {
  if (!Number.isInteger(key.port) || key.port < 1 || key.port > 65535) {
    throw new RangeError(`Port out of range 1..65535: ${key.port}`);
  }
  const { family, bytes } = parseAddress(key.address);
  if (family !== key.family) {
    throw new TypeError(`Address "${key.address}" is not of family ${key.family}`);
  }
  const { family: af, port, addr } = KEY_LAYOUT.fields;
  const out = new Uint8Array(KEY_SIZE);
  const view = new DataView(out.buffer);
  out[af.offset] = family === "ipv4" ? AF_INET : AF_INET6;
  view.setUint16(port.offset, key.port, false);
  out.set(bytes, addr.offset);
  return out;
}

export function decodeKey(bytes: Uint8Array): ProbeKey {
  if (bytes.length !== KEY_SIZE) throw new RangeError(`Probe key must be ${KEY_SIZE} bytes`);
  const { family: familyField, port, addr } = KEY_LAYOUT.fields;
  const af = bytes[familyField.offset];
  if (af !== AF_INET && af !== AF_INET6) throw new TypeError(`Unknown address family ${af}`);
  const family: Family = af === AF_INET ? "ipv4" : "ipv6";
  const addressBytes = family === "ipv4" ? 4 : addr.size;
  return {
    family,
    address: formatAddress(family, bytes.subarray(addr.offset, addr.offset + addressBytes)),
    port: (bytes[port.offset] << 8) | bytes[port.offset + 1], // network order
  };
}

export function encodeValue(value: ProbeValue): Uint8Array {
  const { mark, network_id } = VALUE_LAYOUT.fields;
  const out = new Uint8Array(VALUE_SIZE);
  const view = new DataView(out.buffer);
  view.setUint32(mark.offset, value.mark >>> 0, true);
  view.setUint16(network_id.offset, value.networkId, true);
  return out;
}

export function decodeValue(bytes: Uint8Array): ProbeValue {
  if (bytes.length !== VALUE_SIZE) throw new RangeError(`Probe value must be ${VALUE_SIZE} bytes`);
  return decodeValueAt(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0);
}

/** decodeValue of the value at byte `at` of a buffer of values (a whole map read at once). */
export function decodeValueAt(view: DataView, at: number): ProbeValue {
  const { mark, network_id } = VALUE_LAYOUT.fields;
  return {
    mark: view.getUint32(at + mark.offset, true),
    networkId: view.getUint16(at + network_id.offset, true),
  };
}

/**
 * Reads the hits of a probe value of any layout: the bytes after the agent's
 * fields, zero when the value is too short to have them (ABI 1).
 */
export function decodeHits(bytes: Uint8Array): ProbeHits {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return decodeHitsAt(view, 0, bytes.length);
}

/** decodeHits of the value of `size` bytes at byte `at` of a buffer of values. */
export function decodeHitsAt(view: DataView, at: number, size: number): ProbeHits {
  const { hits, last_hit_ns } = VALUE_LAYOUT.fields;
  if (size < last_hit_ns.offset + last_hit_ns.size) return { hits: 0n, lastHitNs: 0n };
  return {
    hits: view.getBigUint64(at + hits.offset, true),
    lastHitNs: view.getBigUint64(at + last_hit_ns.offset, true),
  };
}

/** Writes hits into a probe value of a layout that has them (at least VALUE_LAYOUT.size bytes). */
export function encodeHitsInto(bytes: Uint8Array, value: ProbeHits): void {
  const { hits, last_hit_ns } = VALUE_LAYOUT.fields;
  if (bytes.length < VALUE_LAYOUT.size) return;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  view.setBigUint64(hits.offset, value.hits, true);
  view.setBigUint64(last_hit_ns.offset, value.lastHitNs, true);
}
