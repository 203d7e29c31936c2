/**
 * A bounded queue that is fair across lanes (the Event recorder's lanes are the namespaces the
 * Events are about): each lane is a FIFO of at most `laneCapacity` items, lanes are served round
 * robin one item at a time, and all lanes together hold at most `capacity`. When the whole queue
 * is full, a newcomer whose lane is shorter than the longest lane takes the place of that lane's
 * newest item, so a lane with little waiting always gets in while another has more: one lane's
 * flood (or many lanes' floods) costs only the flooding lanes. Items have keys, so that a caller
 * can merge a repeat into the item still waiting (`waiting`) instead of queueing it again.
 * Pure: no clock, no I/O.
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
  /** Each lane's waiting entries, oldest first; a lane exists only while it has some. */
  readonly #lanes = new Map<string, Entry<T>[]>();
  /** Lanes with entries in the order they are served next. */
  #turns: string[] = [];
  readonly #byKey = new Map<string, Entry<T>>();
  #size = 0;

  constructor(options: FairQueueOptions) {
    if (!(options.capacity >= 1 && options.laneCapacity >= 1)) {
      throw new RangeError(
        `A fair queue needs room for an item: capacity ${options.capacity}, lane capacity ${options.laneCapacity}`,
      );
    }
    this.#options = options;
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
      const longest = this.#longestLane();
      if (longest === undefined || longest[1].length <= length) return { outcome: "queue-full" };
      displaced = this.#removeNewest(longest[0], longest[1]);
    }
    const entry = { lane, key, item };
    if (entries) entries.push(entry);
    else {
      this.#lanes.set(lane, [entry]);
      this.#turns.push(lane);
    }
    this.#byKey.set(key, entry);
    this.#size++;
    return displaced === undefined ? { outcome: "queued" } : { outcome: "queued", displaced };
  }

  /** The oldest item of the lane whose turn it is, or undefined when nothing waits. */
  shift(): T | undefined {
    const lane = this.#turns.shift();
    if (lane === undefined) return undefined;
    const entries = this.#lanes.get(lane)!;
    const entry = entries.shift()!;
    if (entries.length > 0) this.#turns.push(lane);
    else this.#lanes.delete(lane);
    this.#byKey.delete(entry.key);
    this.#size--;
    return entry.item;
  }

  /** Empties the queue; returns how many items were waiting. */
  clear(): number {
    const size = this.#size;
    this.#lanes.clear();
    this.#byKey.clear();
    this.#turns = [];
    this.#size = 0;
    return size;
  }

  #longestLane(): [string, Entry<T>[]] | undefined {
    let longest: [string, Entry<T>[]] | undefined;
    for (const lane of this.#lanes) {
      if (!longest || lane[1].length > longest[1].length) longest = lane;
    }
    return longest;
  }

  #removeNewest(lane: string, entries: Entry<T>[]): T {
    const entry = entries.pop()!;
    this.#byKey.delete(entry.key);
    this.#size--;
    if (entries.length === 0) {
      this.#lanes.delete(lane);
      this.#turns = this.#turns.filter((l) => l !== lane);
    }
    return entry.item;
  }
}
