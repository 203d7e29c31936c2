/**
 * A BPF map by fd: typed byte-level update, delete, lookup and iteration
 * (the whole-map read is map_entries.ts's). A map is either borrowed from a
 * loaded object (the object owns the fd) or opened from a pin (this wrapper
 * owns it).
 */
import { Errno, unwrap } from "./errors.ts";
import { BPF_ANY, cString } from "./ffi.ts";
import { closeFd, objectInfo, openPinnedObject } from "./fd.ts";
import { libbpfSymbols } from "./library.ts";
import { type RawEntries, readInSteps, type ReadMode, type ReadOptions } from "./map_entries.ts";

/** What the kernel says about a map (struct bpf_map_info). */
export interface MapInfo {
  type: number;
  id: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  name: string;
}

/** Map types whose values are per CPU. */
const PERCPU_TYPES = new Set([5, 6, 10]); // PERCPU_HASH, PERCPU_ARRAY, LRU_PERCPU_HASH

export class BpfMap implements Disposable {
  #fd: number;
  readonly #owned: boolean;
  readonly name: string;
  readonly info: MapInfo;

  private constructor(fd: number, name: string, owned: boolean) {
    this.#fd = fd;
    this.#owned = owned;
    this.name = name;
    this.info = readMapInfo(fd, name);
  }

  /** Wraps an fd owned by a BpfObject; close() leaves it open. */
  static borrow(fd: number, name: string): BpfMap {
    return new BpfMap(fd, name, false);
  }

  /**
   * Opens a pinned map; this wrapper owns the new fd. Throws a BpfError with
   * code ENOENT when there is no pin, and a TypeError when it is no map.
   */
  static openPinned(path: string): BpfMap {
    const fd = openPinnedObject(path, "map");
    try {
      return new BpfMap(fd, path, true);
    } catch (e) {
      closeFd(fd);
      throw e;
    }
  }

  /** Opens a map by its kernel id (e.g. one a running program uses); this wrapper owns the fd. */
  static openById(id: number): BpfMap {
    const fd = unwrap(`bpf_map_get_fd_by_id ${id}`, libbpfSymbols().bpf_map_get_fd_by_id(id));
    try {
      return new BpfMap(fd, `map id ${id}`, true);
    } catch (e) {
      closeFd(fd);
      throw e;
    }
  }

  get fd(): number {
    if (this.#fd < 0) throw new Error(`BPF map "${this.name}" is closed`);
    return this.#fd;
  }

  #checkKey(key: Uint8Array): void {
    if (key.length !== this.info.keySize) {
      throw new RangeError(
        `Key for map "${this.name}" must be ${this.info.keySize} bytes: ${key.length}`,
      );
    }
  }

  /** Pins the map at a bpffs path, so it outlives this process. */
  pin(path: string): void {
    unwrap(
      `bpf_obj_pin "${this.name}" "${path}"`,
      libbpfSymbols().bpf_obj_pin(this.fd, cString(path)),
    );
  }

  /** Inserts or replaces one element. */
  update(key: Uint8Array, value: Uint8Array): void {
    this.#checkKey(key);
    if (value.length !== this.info.valueSize) {
      throw new RangeError(
        `Value for map "${this.name}" must be ${this.info.valueSize} bytes: ${value.length}`,
      );
    }
    unwrap(
      `bpf_map_update_elem "${this.name}"`,
      libbpfSymbols().bpf_map_update_elem(this.fd, key, value, BPF_ANY),
    );
  }

  /** Deletes one element; returns false when it was not there. */
  delete(key: Uint8Array): boolean {
    this.#checkKey(key);
    const rc = libbpfSymbols().bpf_map_delete_elem(this.fd, key);
    if (rc === -Errno.ENOENT) return false;
    unwrap(`bpf_map_delete_elem "${this.name}"`, rc);
    return true;
  }

  /** One element's value, or undefined when the key is absent. */
  lookup(key: Uint8Array): Uint8Array | undefined {
    this.#checkKey(key);
    const value = new Uint8Array(new ArrayBuffer(this.#valueBytes()));
    const rc = libbpfSymbols().bpf_map_lookup_elem(this.fd, key, value);
    if (rc === -Errno.ENOENT) return undefined;
    unwrap(`bpf_map_lookup_elem "${this.name}"`, rc);
    return value;
  }

  /** A per-CPU map's value on every possible CPU, in CPU order. */
  lookupPerCpu(key: Uint8Array): Uint8Array[] | undefined {
    if (!PERCPU_TYPES.has(this.info.type)) {
      throw new TypeError(`Map "${this.name}" is not a per-CPU map`);
    }
    const all = this.lookup(key);
    if (!all) return undefined;
    const stride = roundUp8(this.info.valueSize);
    const out: Uint8Array[] = [];
    for (let off = 0; off < all.length; off += stride) {
      out.push(all.slice(off, off + this.info.valueSize));
    }
    return out;
  }

  /** Every key, by bpf_map_get_next_key (consistent enough for a hash map at rest). */
  keys(): Uint8Array[] {
    const out: Uint8Array[] = [];
    let prev: Uint8Array | null = null;
    for (;;) {
      const next = new Uint8Array(new ArrayBuffer(this.info.keySize));
      const rc = libbpfSymbols().bpf_map_get_next_key(this.fd, prev, next);
      if (rc === -Errno.ENOENT) return out;
      unwrap(`bpf_map_get_next_key "${this.name}"`, rc);
      out.push(next);
      prev = next;
    }
  }

  /**
   * Every (key, value) pair, as views into one buffer each (see readAll).
   */
  entries(mode: ReadMode = "auto"): [Uint8Array, Uint8Array][] {
    const raw = this.readAll(mode);
    const out: [Uint8Array, Uint8Array][] = new Array(raw.count);
    for (let i = 0; i < raw.count; i++) out[i] = [raw.key(i), raw.value(i)];
    return out;
  }

  /**
   * Every entry, keys and values each in one buffer: by bpf_map_lookup_batch
   * (one system call per few thousand entries) where the kernel has it for
   * this map type, else key by key (two calls per entry). "per-entry" forces
   * the second way (tests, the benchmark's comparison).
   *
   * Under concurrent updates a batched read of a hash map returns every entry
   * present from its start to its end exactly once (it walks the buckets in
   * order); one added or removed meanwhile may or may not be in it. The key by
   * key read gives the same guarantee: the kernel restarts its walk from the
   * first key when the previous one was deleted, so keys seen twice are dropped.
   * `options` are for tests; `via` in the result says which way was taken.
   */
  readAll(mode: ReadMode = "auto", options: ReadOptions = {}): RawEntries {
    const steps = this.readInSteps(mode, options);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  /**
   * readAll() a step at a time, for a caller that lets the event loop run
   * between steps (see map_entries.ts's readInSteps).
   */
  readInSteps(
    mode: ReadMode = "auto",
    options: ReadOptions = {},
  ): Generator<RawEntries, RawEntries, void> {
    return readInSteps(this, mode, options);
  }

  /** Per-CPU values: a lookup returns one per possible CPU. */
  get perCpu(): boolean {
    return PERCPU_TYPES.has(this.info.type);
  }

  /** The bytes one lookup writes (a per-CPU map's value on every possible CPU). */
  get lookupBytes(): number {
    return this.#valueBytes();
  }

  #valueBytes(): number {
    return PERCPU_TYPES.has(this.info.type)
      ? roundUp8(this.info.valueSize) * possibleCpus()
      : this.info.valueSize;
  }

  /** Closes an owned fd; a borrowed one stays with its object. Safe to call twice. */
  close(): void {
    if (this.#owned) closeFd(this.#fd);
    this.#fd = -1;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

function roundUp8(n: number): number {
  return Math.ceil(n / 8) * 8;
}

let cpus: number | undefined;
/** The number of possible CPUs, the stride count of per-CPU values. */
function possibleCpus(): number {
  cpus ??= unwrap("libbpf_num_possible_cpus", libbpfSymbols().libbpf_num_possible_cpus());
  return cpus;
}

function readMapInfo(fd: number, name: string): MapInfo {
  // struct bpf_map_info: type, id, key_size, value_size, max_entries, map_flags, name[16]
  const view = objectInfo(fd, 128, `map "${name}"`);
  const nameBytes = new Uint8Array(view.buffer, 24, 16);
  const end = nameBytes.indexOf(0);
  return {
    type: view.getUint32(0, true),
    id: view.getUint32(4, true),
    keySize: view.getUint32(8, true),
    valueSize: view.getUint32(12, true),
    maxEntries: view.getUint32(16, true),
    name: new TextDecoder().decode(nameBytes.subarray(0, end < 0 ? 16 : end)),
  };
}
