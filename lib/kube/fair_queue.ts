/**
 * A bounded queue that is fair across lanes (the Event recorder's lanes are the namespaces the
 * Events are about): each lane is a FIFO of at most `laneCapacity` items, lanes are served round
 * robin one item at a time, and all lanes together hold at most `capacity`. When the whole queue
 * is full, a newcomer whose lane is shorter than the longest lane takes the place of that lane's
 * newest item, so a lane with little waiting always gets in while another has more: one lane's
 * flood (or many lanes' floods) costs only the flooding lanes. Items have keys, so that a caller
 * can merge a repeat into the item still waiting (`waiting`) instead of queueing it again.
 * Every operation takes constant time (lanes are kept by length), so a flood spread over many
 * lanes costs no more per item than one lane's. Pure: no clock, no I/O.
 */

export interface FairQueueOptions {
  /** Items waiting in all lanes together. */
  capacity: number;
  /** Items waiting in one lane. */
  laneCapacity: number;
}

/** What `push` did with an item. */
export interface Admission<T> {
  /**
   * queued: waiting in its lane; lane-full: not queued, its lane holds `laneCapacity` items;
   * queue-full: not queued, the queue is full and no lane is longer than the item's own.
   */
  outcome: "queued" | "lane-full" | "queue-full";
  /** The newest item of the longest lane, dropped to make room for this one. */
  displaced?: T;
}

interface Entry<T> {
  lane: string;
  key: string;
  item: T;
}

export class FairQueue<T> {
  readonly #options: FairQueueOptions;
  /**
   * Each lane's waiting entries, oldest first; a lane exists only while it has some. The map's
   * order is the round: the first lane is served next, and a served lane moves to the end.
   */
  readonly #lanes = new Map<string, Entry<T>[]>();
  /** The lanes of each length (index 1 to laneCapacity): the longest is found without a scan. */
  readonly #byLength: Set<string>[];
  #longest = 0;
  readonly #byKey = new Map<string, Entry<T>>();
  #size = 0;

  constructor(options: FairQueueOptions) {
    if (!(options.capacity >= 1 && options.laneCapacity >= 1)) {
      throw new RangeError(
        `A fair queue needs room for an item: capacity ${options.capacity}, lane capacity ${options.laneCapacity}`,
      );
    }
    this.#options = options;
    this.#byLength = Array.from({ length: options.laneCapacity + 1 }, () => new Set());
  }

  /** Items waiting in all lanes. */
  get size(): number {
    return this.#size;
  }

  /** Lanes with items waiting. */
  get lanes(): number {
    return this.#lanes.size;
  }

  /** The waiting item of `key`, for the caller to merge a repeat into. */
  waiting(key: string): T | undefined {
    return this.#byKey.get(key)?.item;
  }

  /**
   * Queues `item` in `lane` under `key`, which no waiting item may have (merge into
   * `waiting(key)` instead). A displaced item (see the module comment) is returned, for the
   * caller to count as dropped.
   */
  push(lane: string, key: string, item: T): Admission<T> {
    if (this.#byKey.has(key)) throw new RangeError(`An item of key "${key}" is already waiting`);
    const entries = this.#lanes.get(lane);
    const length = entries?.length ?? 0;
    if (length >= this.#options.laneCapacity) return { outcome: "lane-full" };
    let displaced: T | undefined;
    if (this.#size >= this.#options.capacity) {
      if (this.#longest <= length) return { outcome: "queue-full" };
      const longest = this.#byLength[this.#longest].values().next().value!;
      displaced = this.#remove(longest, "newest");
    }
    const entry = { lane, key, item };
    if (entries) entries.push(entry);
    else this.#lanes.set(lane, [entry]);
    this.#relength(lane, length, length + 1);
    this.#byKey.set(key, entry);
    this.#size++;
    return displaced === undefined ? { outcome: "queued" } : { outcome: "queued", displaced };
  }

  /** The oldest item of the lane whose turn it is, or undefined when nothing waits. */
  shift(): T | undefined {
    const lane = this.#lanes.keys().next().value;
    if (lane === undefined) return undefined;
    const item = this.#remove(lane, "oldest");
    // Its turn is over: to the end of the round.
    const entries = this.#lanes.get(lane);
    if (entries) {
      this.#lanes.delete(lane);
      this.#lanes.set(lane, entries);
    }
    return item;
  }

  /** Empties the queue; returns how many items were waiting. */
  clear(): number {
    const size = this.#size;
    this.#lanes.clear();
    this.#byKey.clear();
    for (const lanes of this.#byLength) lanes.clear();
    this.#longest = 0;
    this.#size = 0;
    return size;
  }

  /** Takes the oldest or newest entry out of `lane`, which has one. */
  #remove(lane: string, which: "oldest" | "newest"): T {
    const entries = this.#lanes.get(lane)!;
    const entry = which === "oldest" ? entries.shift()! : entries.pop()!;
    this.#relength(lane, entries.length + 1, entries.length);
    if (entries.length === 0) this.#lanes.delete(lane);
    this.#byKey.delete(entry.key);
    this.#size--;
    return entry.item;
  }

  #relength(lane: string, from: number, to: number): void {
    this.#byLength[from]?.delete(lane);
    if (to > 0) this.#byLength[to].add(lane);
    if (to > this.#longest) this.#longest = to;
    // Lengths change by one at a time, so the longest drops by at most one per change.
    while (this.#longest > 0 && this.#byLength[this.#longest].size === 0) this.#longest--;
  }
}
