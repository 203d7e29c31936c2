/**
 * The test API server's watch cache: a bounded history of changes that
 * watches replay from a resourceVersion (older than the history: 410 Gone),
 * and live fan-out to watchers with selector transitions (an object that
 * stops matching arrives as DELETED).
 */
import { ApiError, type Status } from "./status.ts";
import { apiVersionOf, type KubeObject, type ResourceType } from "./resources.ts";
import { type Filter, matches } from "./selectors.ts";

export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

export interface WatchEvent {
  type: ChangeType | "BOOKMARK" | "ERROR";
  object: KubeObject | Status;
}

/** One open watch, as the HTTP layer registers it. */
export interface Watcher {
  type: ResourceType;
  filter: Filter;
  bookmarks: boolean;
  send(event: WatchEvent): void;
  /** Ends the stream; with `error` the connection breaks instead of ending cleanly. */
  close(error?: boolean): void;
}

/** One write, as the store records it. */
export interface Change {
  type: ChangeType;
  typeKey: string;
  rv: number;
  object: KubeObject;
  old?: KubeObject;
}

/** The key of a resource type in the store and the history. */
export function typeKey(type: ResourceType): string {
  return `${type.group}/${type.resource}`;
}

/** The history of changes and the open watchers of one store. */
export class WatchHub {
  #oldestRv: number;
  #history: Change[] = [];
  #watchers = new Set<Watcher>();

  constructor(readonly historySize: number, startRv: number) {
    this.#oldestRv = startRv;
  }

  /** Forgets the history up to `rv`: resuming from an older version gets 410 Gone. */
  compact(rv: number): void {
    this.#history = [];
    this.#oldestRv = rv;
  }

  /** Whether a resourceVersion is older than the history kept. */
  isTooOld(rv: number): boolean {
    return rv < this.#oldestRv;
  }

  /** Keeps a change in the history and sends it to the watchers it concerns. */
  record(change: Change): void {
    this.#history.push(change);
    while (this.#history.length > this.historySize) {
      this.#oldestRv = this.#history.shift()!.rv;
    }
    for (const watcher of [...this.#watchers]) {
      if (typeKey(watcher.type) !== change.typeKey) continue;
      const event = eventFor(watcher, change);
      if (event) watcher.send(event);
    }
  }

  /**
   * Registers a watcher from a resourceVersion: undefined, "" or "0" first sends
   * every object `current()` gives as ADDED; a version still in the history
   * replays what came after it; an older one gets an ERROR 410 event and the
   * stream ends. Returns the function that unregisters it.
   */
  watch(watcher: Watcher, fromRv: string | undefined, current: () => KubeObject[]): () => void {
    if (!fromRv || fromRv === "0") {
      for (const object of current()) watcher.send({ type: "ADDED", object });
    } else {
      const rv = Number(fromRv);
      if (this.isTooOld(rv)) {
        watcher.send({
          type: "ERROR",
          object: new ApiError(
            410,
            "Expired",
            `too old resource version: ${rv} (${this.#oldestRv})`,
          )
            .toStatus(),
        });
        watcher.close();
        return () => {};
      }
      for (const change of this.#history) {
        if (change.rv <= rv || change.typeKey !== typeKey(watcher.type)) continue;
        const event = eventFor(watcher, change);
        if (event) watcher.send(event);
      }
    }
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  /** Sends a BOOKMARK at `resourceVersion` to every watcher that allows them. */
  bookmark(resourceVersion: string): void {
    for (const watcher of this.#watchers) {
      if (!watcher.bookmarks) continue;
      watcher.send({
        type: "BOOKMARK",
        object: {
          kind: watcher.type.kind,
          apiVersion: apiVersionOf(watcher.type),
          metadata: { resourceVersion },
        },
      });
    }
  }

  /** Open watchers, optionally of one resource type. */
  watchers(type?: ResourceType): Watcher[] {
    return [...this.#watchers].filter((w) => !type || typeKey(w.type) === typeKey(type));
  }

  /** Ends watch streams (all, or those a predicate picks); `error` breaks the connection instead. */
  closeWatches(predicate: (w: Watcher) => boolean, error: boolean): number {
    let count = 0;
    for (const watcher of [...this.#watchers]) {
      if (!predicate(watcher)) continue;
      this.#watchers.delete(watcher);
      watcher.close(error);
      count++;
    }
    return count;
  }

  /** Sends ERROR 410 Expired to watchers and ends their streams; `rv` is the store's newest. */
  expireWatches(predicate: (w: Watcher) => boolean, rv: number): number {
    let count = 0;
    for (const watcher of [...this.#watchers]) {
      if (!predicate(watcher)) continue;
      this.#watchers.delete(watcher);
      watcher.send({
        type: "ERROR",
        object: new ApiError(410, "Expired", `too old resource version: ${this.#oldestRv} (${rv})`)
          .toStatus(),
      });
      watcher.close();
      count++;
    }
    return count;
  }
}

/** What a watcher sees of a change, given whether the object matched before and after. */
function eventFor(watcher: Watcher, change: Change): WatchEvent | undefined {
  const now = matches(watcher.type, watcher.filter, change.object);
  const before = change.old !== undefined && matches(watcher.type, watcher.filter, change.old);
  const object = structuredClone(change.object);
  switch (change.type) {
    case "ADDED":
      return now ? { type: "ADDED", object } : undefined;
    case "MODIFIED":
      if (now) return { type: before ? "MODIFIED" : "ADDED", object };
      return before ? { type: "DELETED", object } : undefined;
    case "DELETED":
      return now || before ? { type: "DELETED", object } : undefined;
  }
}
