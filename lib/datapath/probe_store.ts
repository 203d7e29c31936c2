/**
 * The probe map as a ProbeStore: the pinned BPF hash map, read and written
 * through the shared codec of probe_map.ts.
 */
import { getLogger } from "@logtape/logtape";
import type { BpfMap, RawEntries, ReadMode } from "../libbpf/mod.ts";
import { HitsIndex } from "./hits.ts";
import { probeMapCodecFits } from "./layout.ts";
import {
  decodeHitsAt,
  decodeKey,
  decodeValue,
  decodeValueAt,
  encodeHitsInto,
  encodeKey,
  encodeValue,
  KEY_SIZE,
  type ProbeEntryWithHits,
  type ProbeHits,
  VALUE_SIZE,
} from "./probe_map.ts";
import type { ProbeEntry, ProbeKey, ProbeStore, ProbeValue } from "../probe/key.ts";

const log = getLogger(["lace", "datapath"]);

export class BpfProbeStore implements ProbeStore, Disposable {
  readonly #map: BpfMap;

  /**
   * Wraps an open probe map; refuses a map whose layout this codec cannot read
   * (a newer layout that only appended value fields is read and filled, the
   * unknown fields zero).
   */
  constructor(map: BpfMap) {
    if (!probeMapCodecFits(map.info)) {
      throw new Error(
        `Probe map "${map.name}" has type ${map.info.type} and key/value sizes ${map.info.keySize}/${map.info.valueSize}, this Lace reads a hash map with ${KEY_SIZE}/${VALUE_SIZE} or larger values: it was made by another Lace version, remove it with \`lace uninstall\``,
      );
    }
    this.#map = map;
  }

  /**
   * Every entry in the kernel map; undecodable entries are logged and
   * skipped. Read in batches where the kernel can ("per-entry" forces two
   * system calls an entry, for tests and the benchmark's comparison).
   */
  entries(mode: ReadMode = "auto"): ProbeEntry[] {
    return this.#decoded(this.#map.readAll(mode), false);
  }

  /** Every entry with the datapath's hits (zero in a layout without them). */
  entriesWithHits(mode: ReadMode = "auto"): ProbeEntryWithHits[] {
    return this.#decoded(this.#map.readAll(mode), true) as ProbeEntryWithHits[];
  }

  /**
   * Every entry's hits by key, read a batch per step (one system call of
   * `batch` entries; key by key, in one step, where the kernel has no batch
   * lookup): the caller lets the event loop run between steps. A full map is
   * 64 steps of 1024.
   */
  *hitsInSteps(batch = 1024): Generator<void, HitsIndex, void> {
    const index = new HitsIndex(this.#map.info.maxEntries);
    const steps = this.#map.readInSteps("auto", { firstBatch: batch });
    for (;;) {
      const step = steps.next();
      index.add(step.value);
      if (step.done) return index;
      yield;
    }
  }

  /** Decodes raw entries; undecodable ones are logged and skipped. */
  #decoded(raw: RawEntries, withHits: boolean): ProbeEntry[] {
    const out: ProbeEntry[] = [];
    const values = new DataView(raw.values.buffer, raw.values.byteOffset, raw.values.byteLength);
    for (let i = 0; i < raw.count; i++) {
      const at = i * raw.valueSize;
      try {
        const key = decodeKey(raw.key(i));
        const value = decodeValueAt(values, at);
        const entry: ProbeEntry | ProbeEntryWithHits = withHits
          ? { key, value, hits: decodeHitsAt(values, at, raw.valueSize) }
          : { key, value };
        out.push(entry);
      } catch (error) {
        log.warn("Skipping undecodable probe map entry {key}: {error}", {
          key: Array.from(raw.key(i), (b) => b.toString(16).padStart(2, "0")).join(""),
          error: String(error),
        });
      }
    }
    return out;
  }

  /**
   * Writes one entry; its hits start at zero unless given (a migration
   * carries them over from the map it copies).
   */
  put(entry: ProbeEntry, hits?: ProbeHits): void {
    const value = new Uint8Array(this.#map.info.valueSize);
    value.set(encodeValue(entry.value));
    if (hits) encodeHitsInto(value, hits);
    this.#map.update(encodeKey(entry.key), value);
  }

  remove(key: ProbeKey): void {
    this.#map.delete(encodeKey(key));
  }

  /** One entry's value, or undefined. */
  get(key: ProbeKey): ProbeValue | undefined {
    const value = this.#map.lookup(encodeKey(key));
    return value && decodeValue(value.subarray(0, VALUE_SIZE));
  }

  /** How many entries the kernel map holds. */
  count(): number {
    return this.#map.readAll().count;
  }

  /** The underlying map (to pin it again). */
  get map(): BpfMap {
    return this.#map;
  }

  /** The kernel's id of the map. */
  get mapId(): number {
    return this.#map.info.id;
  }

  /** The kernel's capacity of the map. */
  get capacity(): number {
    return this.#map.info.maxEntries;
  }

  close(): void {
    this.#map.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
