/**
 * The probe map's key/value codec and the store interface the reconciler
 * writes through. The byte layout mirrors `bpf/lace.h` exactly; the agent, the
 * CLI and the tests all go through this one codec.
 */
import { isIPv4, isIPv6 } from "node:net";

export type Family = "ipv4" | "ipv6";

/** Where the kubelet connects: the map key. */
export interface ProbeKey {
  family: Family;
  /** Canonical textual address (IPv4 dotted quad, IPv6 compressed lower case). */
  address: string;
  port: number;
}

/** What a matching connect gets: the map value. */
export interface ProbeValue {
  networkId: number;
  mark: number;
}

export interface ProbeEntry {
  key: ProbeKey;
  value: ProbeValue;
}

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
/** The probe map's max_entries: LACE_MAX_TARGETS in bpf/lace.h. */
export const MAX_TARGETS = 65536;

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

/**
 * Parses an IP address into its 4 or 16 network-order bytes. An IPv4-mapped
 * IPv6 address (`::ffff:a.b.c.d`) is returned as IPv4, the same way the
 * connect6 program looks it up.
 */
export function parseAddress(text: string): { family: Family; bytes: Uint8Array } {
  if (isIPv4(text)) {
    return { family: "ipv4", bytes: Uint8Array.from(text.split(".").map(Number)) };
  }
  if (!isIPv6(text)) throw new TypeError(`Invalid IP address: "${text}"`);
  const bytes = ipv6Bytes(text);
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff &&
    bytes[11] === 0xff;
  if (mapped) return { family: "ipv4", bytes: bytes.slice(12) };
  return { family: "ipv6", bytes };
}

function ipv6Bytes(text: string): Uint8Array {
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    const v4 = text.slice(lastColon + 1).split(".").map(Number);
    tail = [(v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]];
    text = text.slice(0, lastColon + 1) + "0:0";
  }
  const [head, rest] = text.includes("::") ? text.split("::") : [text, undefined];
  const groups = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  let words = groups(head);
  if (rest !== undefined) {
    const back = groups(rest);
    words = [...words, ...new Array(8 - words.length - back.length).fill(0), ...back];
  }
  if (tail.length) words.splice(6, 2, ...tail);
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[i * 2] = w >> 8;
    out[i * 2 + 1] = w & 0xff;
  });
  return out;
}

/**
 * Formats 4 or 16 network-order bytes canonically (RFC 5952 for IPv6). Written
 * without arrays: a resync decodes every key of the map (10k keys, two thirds
 * IPv6: 6.2 ms with arrays and join, 4.0 ms so; best of 40 on the Intel VM).
 */
function formatAddress(family: Family, bytes: Uint8Array): string {
  if (family === "ipv4") return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  const word = (i: number) => (bytes[2 * i] << 8) | bytes[2 * i + 1];
  // The longest run of two or more zero words becomes "::" (the first of equal runs).
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (word(i) !== 0) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < 8 && word(j) === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  let text = "";
  for (let i = 0; i < 8; i++) {
    if (i === best) {
      text += "::";
      i += bestLen - 1;
      continue;
    }
    if (text !== "" && !text.endsWith(":")) text += ":";
    text += word(i).toString(16);
  }
  return text;
}

/** Returns the canonical textual form of an address, or throws TypeError. */
export function canonicalAddress(text: string): { family: Family; address: string } {
  const { family, bytes } = parseAddress(text);
  return { family, address: formatAddress(family, bytes) };
}

/** A stable string identity for a key, usable in Maps and logs. */
export function keyId(key: ProbeKey): string {
  return key.family === "ipv6" ? `[${key.address}]:${key.port}` : `${key.address}:${key.port}`;
}

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

/**
 * The store the reconciler reads and writes: the pinned BPF map in the agent,
 * an in-memory map in unit tests (tests/helpers/memory_probe_store.ts). Reads always come from the store itself,
 * never from a copy, so drift behind the agent's back is seen.
 */
export interface ProbeStore {
  /** Every entry currently in the store. */
  entries(): ProbeEntry[];
  /** Inserts or replaces one entry. */
  put(entry: ProbeEntry): void;
  /** Removes one entry; a missing key is not an error. */
  remove(key: ProbeKey): void;
  /** How many entries the store can hold (the kernel map's max_entries); absent: MAX_TARGETS. */
  readonly capacity?: number;
}
