/**
 * Test support: a ProbeStore in memory, for the unit tests of the reconciler,
 * the agent core and the CNI check, which need no kernel map.
 */
import { encodeKey } from "../../lib/datapath/probe_map.ts";
import { keyId, type ProbeEntry, type ProbeKey, type ProbeStore } from "../../lib/probe/key.ts";

/**
 * A ProbeStore in memory; it validates keys through the real codec, as the BPF
 * store does. With a capacity, a put of a new key into a full store fails the
 * way the kernel's hash map does (E2BIG).
 */
export class MemoryProbeStore implements ProbeStore {
  readonly #entries = new Map<string, ProbeEntry>();
  readonly capacity?: number;
  constructor(opts: { capacity?: number } = {}) {
    if (opts.capacity !== undefined) this.capacity = opts.capacity;
  }
  entries(): ProbeEntry[] {
    return [...this.#entries.values()].map((e) => structuredClone(e));
  }
  put(entry: ProbeEntry): void {
    encodeKey(entry.key);
    const id = keyId(entry.key);
    if (
      this.capacity !== undefined && !this.#entries.has(id) && this.#entries.size >= this.capacity
    ) {
      throw Object.assign(new Error(`bpf_map_update_elem ${id}: E2BIG (the map is full)`), {
        code: "E2BIG",
      });
    }
    this.#entries.set(id, structuredClone(entry));
  }
  remove(key: ProbeKey): void {
    this.#entries.delete(keyId(key));
  }
}
