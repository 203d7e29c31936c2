/**
 * The words of a probe target, shared by the rules, the CNI server, the agent
 * and the datapath: where the kubelet connects (the key), what the connect gets
 * (the network id and the socket mark), and the store that holds them. The
 * datapath's probe map encodes these for the kernel (datapath/probe_map.ts). Pure.
 */
import type { Family } from "../net/address.ts";

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

/** The probe map's max_entries: LACE_MAX_TARGETS in bpf/lace.h. */
export const MAX_TARGETS = 65536;

/** A stable string identity for a key, usable in Maps and logs. */
export function keyId(key: ProbeKey): string {
  return key.family === "ipv6" ? `[${key.address}]:${key.port}` : `${key.address}:${key.port}`;
}

/**
 * The mark's layout, the contract with the data plane: the probe flag bit(s)
 * and the left shift of the network id (Config's probeMark and markShift).
 */
export interface MarkLayout {
  probeMark: number;
  markShift: number;
}

/** The bits of the mark that carry the network id. */
export function networkMask(layout: Pick<MarkLayout, "markShift">): number {
  return (0xffff * 2 ** layout.markShift) >>> 0;
}

/**
 * The socket mark for a network: the contract with the data plane,
 * `probeFlag | networkId << markShift`.
 */
export function markFor(
  layout: MarkLayout,
  networkId: number,
): number {
  if (!Number.isInteger(networkId) || networkId < 1 || networkId > 65535) {
    throw new RangeError(`Network id out of range 1..65535: ${networkId}`);
  }
  return (layout.probeMark | (networkId * 2 ** layout.markShift)) >>> 0;
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
