/**
 * What every pod source (Kubernetes API, directory of manifests, CNI ADD/DEL)
 * feeds into: whole pods keyed by uid. A source reports a full list first and
 * again after every relist, so the agent knows when it may delete.
 */
import type { Pod } from "./pod.ts";

export interface PodSink {
  /** A complete list from this source: every pod it knows, replacing what it said before. */
  replaceAll(source: string, pods: Pod[]): void;
  /** One pod added or changed. */
  upsert(source: string, pod: Pod): void;
  /** One pod gone, by uid. */
  remove(source: string, uid: string): void;
}

export interface PodSource {
  /** Short name used in logs, metrics and the sink (e.g. "api", "dir"). */
  readonly name: string;
  /** Starts delivering to the sink; resolves once started (not when the first list arrives). */
  start(sink: PodSink): Promise<void>;
  /** Stops watching; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Reads one pod by name, for what cannot wait for the watch (the network of a
 * pod at its CNI ADD, from the trusted annotations).
 */
export interface PodLookup {
  /** The pod, or undefined when there is none by that name; rejects when the source cannot say. */
  get(namespace: string, name: string): Promise<Pod | undefined>;
}
