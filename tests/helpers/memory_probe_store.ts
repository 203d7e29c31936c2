/**
 * Test support: a ProbeStore in memory, for the unit tests of the reconciler,
 * the agent core and the CNI check, which need no kernel map.
 */
import {
  encodeKey,
  keyId,
  type ProbeEntry,
  type ProbeKey,
  type ProbeStore,
} from "../../lib/datapath/probe_map.ts";

/** A ProbeStore in memory; it validates keys through the real codec, as the BPF store does. */
export class MemoryProbeStore implements ProbeStore {
  readonly #entries = new Map<string, ProbeEntry>();
  entries(): ProbeEntry[] {
    return [...this.#entries.values()].map((e) => structuredClone(e));
  }
  put(entry: ProbeEntry): void {
    encodeKey(entry.key);
    this.#entries.set(keyId(entry.key), structuredClone(entry));
  }
  remove(key: ProbeKey): void {
    this.#entries.delete(keyId(key));
  }
}
