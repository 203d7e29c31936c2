/**
 * A whole BPF map read into two buffers: by bpf_map_lookup_batch where the
 * kernel has it for the map's type (learnt once per type and process), else
 * key by key, a step at a time for a caller that lets the event loop run.
 * BpfMap (map.ts) reads itself through it; the single-key operations are its.
 */
import { getLogger } from "@logtape/logtape";
import { BpfError, Errno, isErrno, unwrap } from "./errors.ts";
import { libbpfSymbols } from "./library.ts";

const log = getLogger(["lace", "libbpf"]);

/** What a whole-map read needs of a map; BpfMap is one. */
export interface EntrySource {
  readonly fd: number;
  readonly name: string;
  readonly info: {
    readonly type: number;
    readonly keySize: number;
    readonly valueSize: number;
    readonly maxEntries: number;
  };
  /** Per-CPU values: never read in batches. */
  readonly perCpu: boolean;
  /** The bytes one lookup writes (a per-CPU map's value on every possible CPU). */
  readonly lookupBytes: number;
  /** Every key, by bpf_map_get_next_key. */
  keys(): Uint8Array[];
}

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

/**
 * Every entry of `map` a step at a time (BpfMap.readAll() and readInSteps()),
 * for a caller that lets the event loop run between steps: each step of a
 * batched read is one bpf_map_lookup_batch call (`options.firstBatch`
 * entries) and yields the entries read so far (the buffers may be replaced as
 * they grow: read them through the yielded object, not a copy of its fields);
 * a key-by-key read is one step. Returns every entry.
 */
export function* readInSteps(
  map: EntrySource,
  mode: ReadMode = "auto",
  options: ReadOptions = {},
): Generator<RawEntries, RawEntries, void> {
  const type = map.info.type;
  const lookup = options.batchLookup ?? kernelBatchLookup;
  const known = supportOf(lookup);
  if (mode === "auto" && !map.perCpu && known.get(type) !== false) {
    const raw = yield* readBatched(map, lookup, options.firstBatch ?? FIRST_BATCH);
    if (!(raw instanceof BpfError)) return raw;
    known.set(type, false);
    // Once per map type and process: every later read of the type goes key by key silently.
    log[BATCHED_TYPES.has(type) ? "warn" : "debug"](
      "Map {name}: this kernel has no batched lookup for map type {type} ({error}); its reads go key by key, two system calls an entry",
      { name: map.name, type, error: raw.code },
    );
  }
  return readPerEntry(map);
}

/** A batched read, or the error saying the kernel has no batch lookup for this map type. */
function* readBatched(
  map: EntrySource,
  lookup: BatchLookup,
  firstBatch: number,
): Generator<RawEntries, RawEntries | BpfError, void> {
  const { keySize, valueSize, maxEntries } = map.info;
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
      map.fd,
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
    const error = new BpfError(`bpf_map_lookup_batch "${map.name}"`, rc);
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

/** A key-by-key read; keys the kernel's walk gives twice are kept once. */
function readPerEntry(map: EntrySource): RawEntries {
  const { keySize, valueSize } = map.info;
  const out = new EntryBuffer("per-entry", keySize, valueSize, 256);
  const seen = new Set<string>();
  const value = new Uint8Array(map.lookupBytes);
  for (const key of map.keys()) {
    const id = String.fromCharCode(...key);
    if (seen.has(id)) continue;
    const rc = libbpfSymbols().bpf_map_lookup_elem(map.fd, key, value);
    if (rc === -Errno.ENOENT) continue; // deleted between the two calls
    unwrap(`bpf_map_lookup_elem "${map.name}"`, rc);
    seen.add(id);
    out.push(key, value.subarray(0, valueSize));
  }
  return out.done();
}
