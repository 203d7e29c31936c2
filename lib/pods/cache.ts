/**
 * The pods of this node as all sources together see them. Each source's pods
 * are kept apart (keyed by uid) and merged on read, so one source's relist
 * never erases what another source said.
 */
import { getLogger } from "@logtape/logtape";
import { assertUsable, normalisePod, type Pod } from "./pod.ts";
import type { PodSink } from "./source.ts";
import { errorText } from "../text/error.ts";
import { aboutInput, limitedLog } from "../log/limiter.ts";

const log = getLogger(["lace", "pods"]);

export interface PodCacheOptions {
  /** This node's name: pods bound to another node are ignored. Empty: accept all. */
  nodeName?: string;
  /** Source names in priority order for the merge; unlisted sources rank after, by name. */
  priority?: string[];
  /** Called after every change that may alter the desired targets. */
  onChange?: (source: string) => void;
}

const DEFAULT_PRIORITY = ["api", "dir", "cni"];

function hasIPs(pod: Pod): boolean {
  return !!(pod.status?.podIPs?.length || pod.status?.podIP);
}

/**
 * Merges one uid's views, best source first. The best source gives metadata
 * (annotations included), spec and phase: the API knows the pod's real spec.
 * The addresses come from the best source that has any, because the CNI path
 * knows them before the API. The network the node attached the pod to is not
 * part of any view: the agent core holds it apart, so no source can forge it.
 * Views are normalised, hence frozen: the merge shares their parts, and is the
 * best view itself when that view has the addresses too (or none has any).
 * Refused views (assertUsable) merge like any: callers that evaluate the pod
 * check them first (PodCache.get).
 */
function mergePodViews(views: Pod[]): Pod {
  const [best] = views;
  const withIPs = views.find(hasIPs);
  if (!withIPs || withIPs === best) return best;
  const status: NonNullable<Pod["status"]> = { ...best.status };
  delete status.podIP;
  delete status.podIPs;
  if (withIPs.status?.podIP) status.podIP = withIPs.status.podIP;
  if (withIPs.status?.podIPs) status.podIPs = withIPs.status.podIPs;
  return Object.freeze({ ...best, status: Object.freeze(status) });
}

/**
 * Implements PodSink for every source. `synced` is true once every registered
 * source has delivered its first full list: only then may a reconcile delete
 * entries (an empty cache at start must not empty the map). Malformed pods are
 * logged and skipped; nothing a source sends can throw out of the sink.
 */
export class PodCache implements PodSink {
  readonly #bySource = new Map<string, Map<string, Pod>>();
  readonly #registered = new Set<string>();
  readonly #listed = new Set<string>();
  readonly #opts: PodCacheOptions;
  readonly #priority: string[];
  /** Merged views by uid, dropped whenever one of that uid's views changes. */
  readonly #merged = new Map<string, Pod>();

  constructor(opts: PodCacheOptions = {}) {
    this.#opts = opts;
    this.#priority = opts.priority ?? DEFAULT_PRIORITY;
  }

  /** Declares a source whose first full list gates `synced`. */
  register(source: string): void {
    this.#registered.add(source);
  }

  /** Every registered source has sent a full list. */
  get synced(): boolean {
    return [...this.#registered].every((s) => this.#listed.has(s));
  }

  replaceAll(source: string, pods: Pod[]): void {
    const before = this.#bySource.get(source) ?? new Map<string, Pod>();
    const next = new Map<string, Pod>();
    let changed = false;
    for (const input of Array.isArray(pods) ? pods : []) {
      const pod = this.#accept(source, input);
      if (!pod) continue;
      const uid = pod.metadata.uid;
      const old = before.get(uid);
      // Keep the old object when nothing changed, so caches keyed by it stay valid.
      if (old && (old === pod || JSON.stringify(old) === JSON.stringify(pod))) {
        next.set(uid, old);
      } else {
        next.set(uid, pod);
        this.#merged.delete(uid);
        changed = true;
      }
    }
    for (const uid of before.keys()) {
      if (!next.has(uid)) {
        this.#merged.delete(uid);
        changed = true;
      }
    }
    this.#bySource.set(source, next);
    const first = !this.#listed.has(source);
    this.#listed.add(source);
    if (first || changed) this.#changed(source);
  }

  upsert(source: string, input: Pod): void {
    const pod = this.#accept(source, input);
    if (!pod) return;
    let pods = this.#bySource.get(source);
    if (!pods) this.#bySource.set(source, pods = new Map());
    const before = pods.get(pod.metadata.uid);
    if (before && (before === pod || JSON.stringify(before) === JSON.stringify(pod))) return;
    pods.set(pod.metadata.uid, pod);
    this.#merged.delete(pod.metadata.uid);
    this.#changed(source);
  }

  remove(source: string, uid: string): void {
    if (this.#bySource.get(source)?.delete(uid)) {
      this.#merged.delete(uid);
      this.#changed(source);
    }
  }

  /** The merged view of every pod, one per uid, sorted by uid. */
  pods(): Pod[] {
    return this.uids().map((uid) => this.get(uid)!);
  }

  /** The uid of every pod any source knows, sorted. */
  uids(): string[] {
    const uids = new Set<string>();
    for (const pods of this.#bySource.values()) for (const uid of pods.keys()) uids.add(uid);
    return [...uids].sort();
  }

  /**
   * Who a pod is, from its best view's metadata, without merging its views:
   * enough to report a pod whose merge or rules failed. Never throws (every
   * view was normalised, so name, namespace and uid are strings).
   */
  identity(uid: string): { namespace: string; name: string; uid: string } | undefined {
    for (const source of this.#sourcesByPriority()) {
      const pod = this.#bySource.get(source)?.get(uid);
      if (pod) return { namespace: pod.metadata.namespace, name: pod.metadata.name, uid };
    }
    return undefined;
  }

  /**
   * The merged view of one pod, or undefined. The same object is returned
   * until one of the pod's views changes; callers must not modify it.
   */
  get(uid: string): Pod | undefined {
    const cached = this.#merged.get(uid);
    if (cached) return cached;
    const views = this.#views(uid);
    if (!views.length) return undefined;
    // A refused view (over the size cap, nested too deeply) throws: the pod gets no targets.
    views.forEach(assertUsable);
    const merged = mergePodViews(views);
    this.#merged.set(uid, merged);
    return merged;
  }

  /**
   * The merged view of one pod even when a view of it was refused (get() throws then), for
   * where the pod sits and nothing else: a refused pod gets no targets, but it still holds its
   * addresses on the node (a refused API view is a skeleton of them, or the CNI path's view
   * brings them). Never throws. Not kept: only refused pods are asked for it, and the merge
   * costs a copy of their status at most.
   */
  holderView(uid: string): Pod | undefined {
    const views = this.#views(uid);
    return views.length ? mergePodViews(views) : undefined;
  }

  #views(uid: string): Pod[] {
    return this.#sourcesByPriority()
      .map((s) => this.#bySource.get(s)?.get(uid))
      .filter((p): p is Pod => p !== undefined);
  }

  /** The sources that have a view of this pod now, best first. */
  sourcesOf(uid: string): string[] {
    return this.#sourcesByPriority().filter((s) => this.#bySource.get(s)?.has(uid));
  }

  #sourcesByPriority(): string[] {
    const rank = (s: string) => {
      const i = this.#priority.indexOf(s);
      return i < 0 ? this.#priority.length : i;
    };
    return [...this.#bySource.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
  }

  /** A source that re-sends a normalised pod (the directory source for files that did not
   * change) costs no work: normalisePod hands it back as it is. */
  #accept(source: string, input: unknown): Pod | undefined {
    let pod: Pod;
    try {
      pod = normalisePod(input);
    } catch (error) {
      limitedLog(
        log,
        "warning",
        aboutInput("MalformedPod", input),
        "Skipped a malformed pod from {source}: {error}",
        { source, error: errorText(error) },
      );
      return undefined;
    }
    const node = this.#opts.nodeName;
    if (node && pod.spec.nodeName && pod.spec.nodeName !== node) {
      log.debug("Ignored pod {pod} from {source}: bound to node {other}", {
        pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
        source,
        other: pod.spec.nodeName,
      });
      return undefined;
    }
    return pod;
  }

  #changed(source: string): void {
    try {
      this.#opts.onChange?.(source);
    } catch (error) {
      log.error("Pod change listener failed: {error}", { error });
    }
  }
}
