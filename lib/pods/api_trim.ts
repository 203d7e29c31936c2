/**
 * The API's pods trimmed before anything keeps them. Memory stays bounded whatever a tenant
 * binds to the node (a pod object may be 1.5 MB, and any tenant can bind pods to any node with
 * spec.nodeName): the list comes in pages, and every object, listed or
 * watched, is trimmed to Lace's fields (normalisePod, with only Lace's annotations) as it
 * arrives, before client-node's informer caches it. The informer holds the same frozen pod the
 * sink gets, never the full object. Each whole object is garbage once trimmed, and a HeapGate
 * collects it after every 16 MiB of growth, long before V8 would by itself. A pod whose trimmed
 * fields are still over `maxPodBytes` is kept as a bounded skeleton (skeleton.ts: who it is and
 * the addresses it holds) and refused (no targets, reported as `too-large`).
 */
import { getLogger } from "@logtape/logtape";
import { errorText } from "../text/error.ts";
import { aboutInput, limitedLog } from "../log/limiter.ts";
import type { HeapGate } from "../os/heap_gate.ts";
import { hasFinished, MAX_POD_BYTES, normalisePod, type Pod } from "./pod.ts";

const log = getLogger(["lace", "api"]);

/** What bounds the memory the API's pods take. */
export interface PodMemoryOptions {
  /** The only annotations kept of each pod (Lace's network annotations); every one when unset. */
  annotations?: readonly string[];
  /** The largest a pod's kept fields may be, in bytes of JSON (default MAX_POD_BYTES). */
  maxPodBytes?: number;
  /**
   * Pods per page of the list: a list holds a page of whole objects at a time, which at the
   * API server's largest pod (1.5 MB) is 7.5 MB of JSON at the default of 5 (a node of 110
   * pods lists in 22 requests). Smaller pages lower the agent's peak RSS while it lists such
   * pods (tests/agent_memory_test.ts).
   */
  pageSize?: number;
  /** Collects the whole objects' garbage (a HeapGate of 16 MiB steps by default). */
  heapGate?: HeapGate;
}

/** Trims the API's objects for the informer, and tells the pods among them from skeletons. */
export class PodTrimmer {
  #options: PodMemoryOptions;
  /** What stands in the informer for an object that is no usable pod: only where it is. */
  #skeletons = new WeakSet<object>();

  constructor(options: PodMemoryOptions = {}) {
    this.#options = options;
  }

  /**
   * The object the informer keeps and the sink gets: the pod trimmed to Lace's fields (or its
   * skeleton when over the size cap), or for an object that is no usable pod a skeleton
   * of its name, namespace and resourceVersion, which the informer needs and the sink never
   * gets.
   */
  trim(object: unknown): unknown {
    try {
      return normalisePod(object, {
        annotations: this.#options.annotations,
        maxBytes: this.#options.maxPodBytes ?? MAX_POD_BYTES,
      });
    } catch (error) {
      limitedLog(
        log,
        "warning",
        aboutInput("MalformedPod", object),
        "Ignoring a malformed pod from the API: {error}",
        { error: errorText(error) },
      );
      const meta = (object as { metadata?: Record<string, unknown> } | null)?.metadata;
      const skeleton: { metadata: Record<string, string> } = { metadata: {} };
      for (const field of ["name", "namespace", "uid", "resourceVersion"]) {
        const value = meta !== null && typeof meta === "object" ? meta[field] : undefined;
        if (typeof value === "string") skeleton.metadata[field] = value;
      }
      this.#skeletons.add(skeleton);
      return skeleton;
    }
  }

  /** The pod a trimmed object is, or undefined for a skeleton. */
  pod(object: unknown): Pod | undefined {
    if (typeof object !== "object" || object === null || this.#skeletons.has(object)) {
      return undefined;
    }
    return normalisePod(object);
  }
}

/** One page of the pod list, as the API answers it. */
export interface PodPage {
  items: unknown[];
  metadata?: { resourceVersion?: string; _continue?: string };
}

/**
 * The whole pod list, page by page, each page trimmed (pods that finished left out) and its
 * garbage collected before the next is asked for: the list holds one page of whole objects at
 * a time. Stops paging once `stopped()` says so.
 */
export async function listTrimmedPods(
  page: (token: string | undefined) => Promise<PodPage>,
  trimmer: PodTrimmer,
  heap: HeapGate,
  stopped: () => boolean,
): Promise<{ resourceVersion: string; items: unknown[] }> {
  const items: unknown[] = [];
  let resourceVersion = "";
  let token: string | undefined;
  do {
    const answer = await page(token);
    for (const item of answer.items) if (!hasFinished(item)) items.push(trimmer.trim(item));
    heap.check();
    resourceVersion = answer.metadata?.resourceVersion ?? resourceVersion;
    token = answer.metadata?._continue || undefined;
  } while (token !== undefined && !stopped());
  return { resourceVersion, items };
}
