/**
 * The probe map as a ProbeStore: the pinned BPF hash map, read and written
 * through the shared codec of probe_map.ts.
 */
import { getLogger } from "@logtape/logtape";
import type { BpfMap } from "./libbpf/map.ts";
import { probeMapCodecFits } from "./layout.ts";
import {
  decodeHits,
  decodeKey,
  decodeValue,
  encodeHitsInto,
  encodeKey,
  encodeValue,
  KEY_SIZE,
  type ProbeEntry,
  type ProbeEntryWithHits,
  type ProbeHits,
  type ProbeKey,
  type ProbeStore,
  type ProbeValue,
  VALUE_SIZE,
} from "./probe_map.ts";

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

  /** Every entry in the kernel map; undecodable entries are logged and skipped. */
  entries(): ProbeEntry[] {
    return this.entriesWithHits().map(({ key, value }) => ({ key, value }));
  }

  /** Every entry with the datapath's hits (zero in a layout without them). */
  entriesWithHits(): ProbeEntryWithHits[] {
    return this.#decoded(this.#map.entries());
  }

  /** Decodes raw entries; undecodable ones are logged and skipped. */
  #decoded(raw: Iterable<[Uint8Array, Uint8Array]>): ProbeEntryWithHits[] {
    const out: ProbeEntryWithHits[] = [];
    for (const [k, v] of raw) {
      try {
        out.push({
          key: decodeKey(k),
          value: decodeValue(v.subarray(0, VALUE_SIZE)),
          hits: decodeHits(v),
        });
      } catch (error) {
        log.warn("Skipping undecodable probe map entry {key}: {error}", {
          key: Array.from(k, (b) => b.toString(16).padStart(2, "0")).join(""),
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

  /** One entry's hits (zero when the map does not hold it, or its layout has none). */
  hits(key: ProbeKey): ProbeHits {
    const value = this.#map.lookup(encodeKey(key));
    return value ? decodeHits(value) : { hits: 0n, lastHitNs: 0n };
  }

  /** How many entries the kernel map holds. */
  count(): number {
    return this.#map.keys().length;
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
