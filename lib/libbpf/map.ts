/**
 * A BPF map by fd: typed byte-level update, delete, lookup and iteration.
 * A map is either borrowed from a loaded object (the object owns the fd) or
 * opened from a pin (this wrapper owns it).
 */
import { getLogger } from "@logtape/logtape";
import { BpfError, Errno, isErrno, unwrap } from "./errors.ts";
import { BPF_ANY, cString } from "./ffi.ts";
import { closeFd, objectInfo, openPinnedObject } from "./fd.ts";
import { libbpfSymbols } from "./library.ts";

const log = getLogger(["lace", "libbpf"]);

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

/** Entries asked for by each batch call; doubled when one hash bucket holds more (ENOSPC). */
const FIRST_BATCH = 4096;

/** What a kernel without batch lookups for a map type answers (5.6+ has them for hash maps). */
const BATCH_UNSUPPORTED = ["EINVAL", "ENOTSUPP", "EOPNOTSUPP", "ENOSYS"];

/**
 * Map types with batch lookups on every kernel Lace runs on (hash maps since 5.6; its cgroup links
 * need 5.7): a read of one going key by key is worth a warning. Others (the pod ranges trie) have
 * none on any kernel.
 */
const BATCHED_TYPES = new Set([1]); // HASH

/**
 * bpf_map_lookup_batch as a batched read calls it: 0, or -errno (ENOENT: the walk ended). A test
 * passes its own to count the calls or to play a kernel without it.
 */
export type BatchLookup = (
  fd: number,
  inBatch: Uint8Array | null,
  outBatch: Uint8Array,
  keys: Uint8Array,
  values: Uint8Array,
  count: Uint8Array,
) => number;

/** The kernel's bpf_map_lookup_batch (through libbpf). */
export const kernelBatchLookup: BatchLookup = (fd, inBatch, outBatch, keys, values, count) =>
  libbpfSymbols().bpf_map_lookup_batch(fd, inBatch, outBatch, keys, values, count, null);

/**
 * Whether a batch lookup works, by map type: learnt from the first batched
 * read of each type in this process, so a kernel without it pays for one
 * refused call, not one per read. Kept per lookup: what a test's lookup
 * answers says nothing of the kernel.
 */
const batchSupport = new WeakMap<BatchLookup, Map<number, boolean>>();

function supportOf(lookup: BatchLookup): Map<number, boolean> {
  let known = batchSupport.get(lookup);
  if (!known) batchSupport.set(lookup, known = new Map());
  return known;
}

/** How readAll reads: batched where the kernel can ("auto"), or key by key. */
export type ReadMode = "auto" | "per-entry";

export interface ReadOptions {
  /** Entries asked for by the first batch call; grown when a hash bucket holds more. */
  firstBatch?: number;
  /** The batch call; the kernel's by default. */
  batchLookup?: BatchLookup;
}

/** A map's entries in two buffers: key i at i × keySize, value i at i × valueSize. */
export interface RawEntries {
  /** How the entries were read: by batch lookups, or key by key. */
  readonly via: "batch" | "per-entry";
  readonly count: number;
  readonly keySize: number;
  readonly valueSize: number;
  readonly keys: Uint8Array;
  readonly values: Uint8Array;
  /** Entry i's key, a view (no copy). */
  key(i: number): Uint8Array;
  /** Entry i's value, a view (no copy). */
  value(i: number): Uint8Array;
}

/** The growing buffers a read fills. */
class EntryBuffer implements RawEntries {
  count = 0;
  keys: Uint8Array<ArrayBuffer>;
  values: Uint8Array<ArrayBuffer>;
  constructor(
    readonly via: RawEntries["via"],
    readonly keySize: number,
    readonly valueSize: number,
    capacity: number,
  ) {
    this.keys = new Uint8Array(keySize * capacity);
    this.values = new Uint8Array(valueSize * capacity);
  }
  /** Makes room for `more` entries after the ones read. */
  reserve(more: number): void {
    const need = this.count + more;
    if (need * this.keySize <= this.keys.length) return;
    const capacity = Math.max(need, 2 * (this.keys.length / this.keySize));
    const keys = new Uint8Array(this.keySize * capacity);
    const values = new Uint8Array(this.valueSize * capacity);
    keys.set(this.keys.subarray(0, this.count * this.keySize));
    values.set(this.values.subarray(0, this.count * this.valueSize));
    this.keys = keys;
    this.values = values;
  }
  push(key: Uint8Array, value: Uint8Array): void {
    this.reserve(1);
    this.keys.set(key, this.count * this.keySize);
    this.values.set(value, this.count * this.valueSize);
    this.count++;
  }
  done(): RawEntries {
    return this;
  }
  key(i: number): Uint8Array {
    return this.keys.subarray(i * this.keySize, (i + 1) * this.keySize);
  }
  value(i: number): Uint8Array {
    return this.values.subarray(i * this.valueSize, (i + 1) * this.valueSize);
  }
}

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
   * between steps: each step of a batched read is one bpf_map_lookup_batch
   * call (`options.firstBatch` entries) and yields the entries
   * read so far (the buffers may be replaced as they grow: read them through
   * the yielded object, not a copy of its fields); a key-by-key read is one
   * step. Returns every entry, as readAll() does.
   */
  *readInSteps(
    mode: ReadMode = "auto",
    options: ReadOptions = {},
  ): Generator<RawEntries, RawEntries, void> {
    const type = this.info.type;
    const lookup = options.batchLookup ?? kernelBatchLookup;
    const known = supportOf(lookup);
    if (mode === "auto" && !PERCPU_TYPES.has(type) && known.get(type) !== false) {
      const raw = yield* this.#readBatched(lookup, options.firstBatch ?? FIRST_BATCH);
      if (!(raw instanceof BpfError)) return raw;
      known.set(type, false);
      // Once per map type and process: every later read of the type goes key by key silently.
      log[BATCHED_TYPES.has(type) ? "warn" : "debug"](
        "Map {name}: this kernel has no batched lookup for map type {type} ({error}); its reads go key by key, two system calls an entry",
        { name: this.name, type, error: raw.code },
      );
    }
    return this.#readPerEntry();
  }

  /** A batched read, or the error saying the kernel has no batch lookup for this map type. */
  *#readBatched(
    lookup: BatchLookup,
    firstBatch: number,
  ): Generator<RawEntries, RawEntries | BpfError, void> {
    const { keySize, valueSize, maxEntries } = this.info;
    let batch = Math.max(1, Math.floor(firstBatch));
    const out = new EntryBuffer("batch", keySize, valueSize, Math.min(maxEntries, batch));
    // The batch token is opaque (a bucket index for a hash map); key-sized is large enough.
    let inBatch: Uint8Array | null = null;
    const outBatch = new Uint8Array(Math.max(8, keySize));
    const count = new Uint32Array(1);
    const countBytes = new Uint8Array(count.buffer);
    for (;;) {
      out.reserve(batch);
      count[0] = batch;
      const rc = lookup(
        this.fd,
        inBatch,
        outBatch,
        out.keys.subarray(out.count * keySize),
        out.values.subarray(out.count * valueSize),
        countBytes,
      );
      // ENOENT: the walk reached the end; `count` holds what this last call read.
      if (rc === 0 || rc === -Errno.ENOENT) {
        out.count += count[0];
        if (rc === -Errno.ENOENT) return out.done();
        inBatch ??= new Uint8Array(outBatch.length);
        inBatch.set(outBatch);
        yield out;
        continue;
      }
      const error = new BpfError(`bpf_map_lookup_batch "${this.name}"`, rc);
      if (out.count === 0 && inBatch === null && isErrno(error, ...BATCH_UNSUPPORTED)) {
        return error;
      }
      // ENOSPC: one bucket holds more entries than the batch asked for (hash collisions); nothing
      // was read, so the same call again with room for more.
      if (rc === -Errno.ENOSPC && batch < maxEntries) {
        batch = Math.min(batch * 2, maxEntries);
        continue;
      }
      throw error;
    }
  }

  #readPerEntry(): RawEntries {
    const { keySize, valueSize } = this.info;
    const out = new EntryBuffer("per-entry", keySize, valueSize, 256);
    const seen = new Set<string>();
    const value = new Uint8Array(this.#valueBytes());
    for (const key of this.keys()) {
      const id = String.fromCharCode(...key);
      if (seen.has(id)) continue;
      const rc = libbpfSymbols().bpf_map_lookup_elem(this.fd, key, value);
      if (rc === -Errno.ENOENT) continue; // deleted between the two calls
      unwrap(`bpf_map_lookup_elem "${this.name}"`, rc);
      seen.add(id);
      out.push(key, value.subarray(0, valueSize));
    }
    return out.done();
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
