/**
 * Per-target hits as operators read them: how many kubelet connects the
 * datapath tagged for a target and how long ago the last one was. Pure; the
 * clock reading is the caller's.
 */
import {
  AF_INET,
  AF_INET6,
  decodeHitsAt,
  decodeKey,
  KEY_LAYOUT,
  type ProbeHits,
} from "./probe_map.ts";
import type { ProbeKey } from "../probe/key.ts";

/** A target's hits for JSON and tables. */
export interface HitsView {
  /** Kubelet connects the datapath tagged for this target since it was written. */
  hits: number;
  /** Seconds since the last tagged connect (to 0.1 s); null when there was none. */
  lastHitAgeSeconds: number | null;
}

/**
 * The view of one target's hits at `nowNs` (CLOCK_MONOTONIC): a last hit
 * recorded a little after `nowNs` (the coarse clock runs in ticks) is age 0.
 */
export function hitsView(hits: ProbeHits, nowNs: bigint): HitsView {
  if (hits.lastHitNs === 0n) return { hits: Number(hits.hits), lastHitAgeSeconds: null };
  const ageNs = nowNs > hits.lastHitNs ? nowNs - hits.lastHitNs : 0n;
  return { hits: Number(hits.hits), lastHitAgeSeconds: Number(ageNs / 100_000_000n) / 10 };
}

/** A target the map does not hold (or not yet): no hits. */
export const NO_HITS: Readonly<ProbeHits> = Object.freeze({ hits: 0n, lastHitNs: 0n });

/** The buffers of a map read that HitsIndex needs (RawEntries of libbpf/map.ts is one). */
export interface RawHitEntries {
  readonly count: number;
  readonly keySize: number;
  readonly valueSize: number;
  readonly keys: Uint8Array;
  readonly values: Uint8Array;
}

/**
 * Each key's hits in a raw read of the probe map: an open-addressing index
 * (two typed arrays: entry and hash of its keyId per slot) over the read's own
 * buffers, no object kept per entry. /targets reads a full map (65,536
 * entries) in 64 batched system calls instead of one per target, and holds
 * nothing but the buffers while it writes: a Map of the entries would be
 * megabytes of strings promoted to the old generation per answer, for a full
 * collection to clear. Keys are matched by their keyId text (formatting a
 * raw key is far cheaper than parsing an address).
 */
export class HitsIndex {
  #raw: RawHitEntries | undefined;
  /** Entry i + 1 per slot; 0 is empty. */
  #slots: Int32Array;
  /** The hash of each slot's key (hashKey), to skip other keys without comparing them. */
  #hashes: Uint32Array;
  #indexed = 0;
  #view: DataView | undefined;

  /** `expected`: how many entries the read may hold (the map's max_entries). */
  constructor(expected: number) {
    this.#slots = new Int32Array(slotsFor(expected));
    this.#hashes = new Uint32Array(this.#slots.length);
  }

  /**
   * Indexes the entries `raw` holds beyond those already indexed, as one read
   * grows; another read replaces the one indexed. An undecodable key is left out.
   */
  add(raw: RawHitEntries): void {
    if (this.#raw !== undefined && raw !== this.#raw) {
      this.#slots.fill(0);
      this.#indexed = 0;
    }
    this.#raw = raw;
    this.#view = undefined;
    if (2 * raw.count > this.#slots.length) this.#rehash(slotsFor(raw.count));
    for (let i = this.#indexed; i < raw.count; i++) this.#insert(i);
    this.#indexed = raw.count;
  }

  /** The hits of `key`'s entry, or undefined when the read has none. */
  get(key: ProbeKey): ProbeHits | undefined {
    const raw = this.#raw;
    if (!raw) return undefined;
    const i = this.#find(key, hashKey(key));
    if (i < 0) return undefined;
    if (this.#view?.buffer !== raw.values.buffer) {
      this.#view = new DataView(raw.values.buffer, raw.values.byteOffset, raw.values.byteLength);
    }
    return decodeHitsAt(this.#view, i * raw.valueSize, raw.valueSize);
  }

  /** The entry whose key is `key` (of hash `h`), or -1. */
  #find(key: ProbeKey, h: number): number {
    const mask = this.#slots.length - 1;
    for (let s = h & mask;; s = (s + 1) & mask) {
      const at = this.#slots[s];
      if (at === 0) return -1;
      if (this.#hashes[s] === h && this.#holds(at - 1, key)) return at - 1;
    }
  }

  /**
   * Whether entry i's key is `key`: family and port from the bytes, an IPv4
   * address compared octet by octet with its text, an IPv6 one formatted (the
   * only case that makes garbage: formatting every key would fill the young
   * generation many times over per full map).
   */
  #holds(i: number, key: ProbeKey): boolean {
    const raw = this.#raw!;
    const at = i * raw.keySize;
    const { family, port, addr } = KEY_LAYOUT.fields;
    const bytes = raw.keys;
    if (bytes[at + family.offset] !== (key.family === "ipv4" ? AF_INET : AF_INET6)) return false;
    if (((bytes[at + port.offset] << 8) | bytes[at + port.offset + 1]) !== key.port) return false;
    if (key.family === "ipv4") return dottedQuadIs(key.address, bytes, at + addr.offset);
    try {
      return decodeKey(bytes.subarray(at, at + raw.keySize)).address === key.address;
    } catch {
      return false;
    }
  }

  #insert(i: number): void {
    const raw = this.#raw!;
    let key: ProbeKey;
    try {
      key = decodeKey(raw.keys.subarray(i * raw.keySize, (i + 1) * raw.keySize));
    } catch {
      return;
    }
    const h = hashKey(key);
    if (this.#find(key, h) >= 0) return; // the first of a key wins
    const mask = this.#slots.length - 1;
    let s = h & mask;
    while (this.#slots[s] !== 0) s = (s + 1) & mask;
    this.#slots[s] = i + 1;
    this.#hashes[s] = h;
  }

  #rehash(size: number): void {
    this.#slots = new Int32Array(size);
    this.#hashes = new Uint32Array(size);
    for (let i = 0; i < this.#indexed; i++) this.#insert(i);
  }
}

/** A power of two at least twice `entries` (at most half the slots in use). */
function slotsFor(entries: number): number {
  let n = 16;
  while (n < 2 * entries) n *= 2;
  return n;
}

/** FNV-1a over a key's address text, then its port and family. */
function hashKey(key: ProbeKey): number {
  let h = 0x811c9dc5;
  const text = key.address;
  for (let j = 0; j < text.length; j++) h = Math.imul(h ^ text.charCodeAt(j), 0x01000193);
  h = Math.imul(h ^ key.port, 0x01000193);
  h = Math.imul(h ^ (key.family === "ipv4" ? 4 : 6), 0x01000193);
  return h >>> 0;
}

/** Whether `text` is the dotted quad of the 4 bytes of `bytes` at `at` (no allocation). */
function dottedQuadIs(text: string, bytes: Uint8Array, at: number): boolean {
  let octet = 0, digits = 0, n = 0;
  for (let j = 0; j <= text.length; j++) {
    const c = j < text.length ? text.charCodeAt(j) : 46; // the end closes the last octet
    if (c >= 48 && c <= 57 && digits < 3) {
      octet = octet * 10 + (c - 48);
      digits++;
    } else if (c === 46 && digits > 0 && n < 4) {
      if (octet !== bytes[at + n]) return false;
      n++;
      octet = 0;
      digits = 0;
    } else {
      return false;
    }
  }
  return n === 4;
}
