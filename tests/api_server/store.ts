/**
 * The test API server's storage: what etcd plus the watch cache do for the
 * real server. One global resourceVersion counter and objects per resource
 * type; every write goes to the watch cache (watch_hub.ts), which replays and
 * fans it out to watchers.
 *
 * Writes through the HTTP layer pass `admission: true` (namespace must exist,
 * status is reset on create); tests seeding state call the store directly, as
 * an admin or a controller would, and may set status freely.
 */
import { ApiError } from "./status.ts";
import {
  apiVersionOf,
  type KubeObject,
  qualifiedResource,
  type ResourceRegistry,
  type ResourceType,
} from "./resources.ts";
import { type Filter, matches } from "./selectors.ts";
import {
  checkKind,
  conflictError,
  generateSuffix,
  nameRequiredError,
  namespaceMismatchError,
  notFoundError,
  specOf,
  timestamp,
  uidPreconditionError,
  withoutVolatile,
} from "./object_rules.ts";
import { validateEvent, validateName } from "./validation.ts";
import { type Change, typeKey, type Watcher, WatchHub } from "./watch_hub.ts";

export interface WriteOptions {
  /** Apply the admission rules of a real API request (namespace exists, status reset). */
  admission?: boolean;
  subresource?: "status";
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  /** Sets deletionTimestamp and keeps the object (graceful pod deletion) instead of removing it. */
  graceful?: boolean;
  gracePeriodSeconds?: number;
}

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export class ResourceStore {
  #rv: number;
  #objects = new Map<string, Map<string, KubeObject>>();
  readonly #hub: WatchHub;

  constructor(readonly registry: ResourceRegistry, readonly historySize = 1000, startRv = 1000) {
    this.#rv = startRv;
    this.#hub = new WatchHub(historySize, startRv);
  }

  /** The newest resourceVersion, as a string like the API's. */
  get resourceVersion(): string {
    return String(this.#rv);
  }

  /** Forgets the history: every watch or list from an older resourceVersion now gets 410 Gone. */
  compact(): void {
    this.#hub.compact(this.#rv);
  }

  /** Whether a resourceVersion is older than the history the store keeps. */
  isTooOld(rv: number): boolean {
    return this.#hub.isTooOld(rv);
  }

  #bucket(type: ResourceType): Map<string, KubeObject> {
    let bucket = this.#objects.get(typeKey(type));
    if (!bucket) {
      bucket = new Map();
      this.#objects.set(typeKey(type), bucket);
    }
    return bucket;
  }

  #namespaceOf(type: ResourceType, namespace: string | undefined): string {
    return type.namespaced ? (namespace || "default") : "";
  }

  /** One object, or 404. */
  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const object = this.#bucket(type).get(objectKey(this.#namespaceOf(type, namespace), name));
    if (!object) throw notFoundError(type, name);
    return structuredClone(object);
  }

  /** Objects matching a filter, sorted by namespace and name like etcd keys, with paging. */
  list(type: ResourceType, filter: Filter, limit = 0, continueToken = ""): ListResult {
    let listRv = this.#rv;
    let after = "";
    if (continueToken) {
      try {
        const token = JSON.parse(atob(continueToken));
        listRv = Number(token.rv);
        after = String(token.start);
      } catch {
        throw new ApiError(400, "BadRequest", "continue key is not valid: illegal base64 data");
      }
      if (this.isTooOld(listRv)) {
        throw new ApiError(
          410,
          "Expired",
          "The provided continue parameter is too old to display a consistent list result. " +
            "You can start a new list without the continue parameter.",
        );
      }
    }
    const entries = [...this.#bucket(type).entries()]
      .filter(([key, object]) => key > after && matches(type, filter, object))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const page = limit > 0 ? entries.slice(0, limit) : entries;
    const result: ListResult = {
      items: page.map(([, object]) => structuredClone(object)),
      resourceVersion: String(listRv),
    };
    if (page.length < entries.length) {
      const last = page[page.length - 1][0];
      result.continue = btoa(JSON.stringify({ rv: listRv, start: last }));
      result.remainingItemCount = entries.length - page.length;
    }
    return result;
  }

  /** Creates an object: generateName, uid, resourceVersion, creationTimestamp; 409 if it exists. */
  create(
    type: ResourceType,
    namespace: string | undefined,
    input: KubeObject,
    options: WriteOptions = {},
  ): KubeObject {
    const object = structuredClone(input);
    const meta = object.metadata ??= {};
    const ns = this.#namespaceOf(type, namespace ?? meta.namespace);
    checkKind(type, object);
    if (type.namespaced) {
      if (meta.namespace && meta.namespace !== ns) {
        throw namespaceMismatchError();
      }
      meta.namespace = ns;
      if (options.admission && !this.#bucket(this.#namespaces()).has(objectKey("", ns))) {
        throw notFoundError(this.#namespaces(), ns);
      }
    } else {
      delete meta.namespace;
    }
    if (!meta.name && meta.generateName) meta.name = meta.generateName + generateSuffix();
    if (!meta.name) throw nameRequiredError(type);
    validateName(type, object);
    if (options.admission && type.statusSubresource) {
      object.status = type.initialStatus?.() ?? {};
    }
    if (type.kind === "Event" && type.group === "") validateEvent(object, ns, type);
    type.validate?.(object, ns);
    const bucket = this.#bucket(type);
    const key = objectKey(ns, meta.name);
    if (bucket.has(key)) {
      throw new ApiError(
        409,
        "AlreadyExists",
        `${qualifiedResource(type)} "${meta.name}" already exists`,
        {
          name: meta.name,
          group: type.group,
          kind: type.resource,
        },
      );
    }
    meta.uid = crypto.randomUUID();
    meta.creationTimestamp = timestamp();
    meta.generation = 1;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    object.apiVersion = apiVersionOf(type);
    object.kind = type.kind;
    meta.resourceVersion = String(++this.#rv);
    bucket.set(key, object);
    this.#record({ type: "ADDED", typeKey: typeKey(type), rv: this.#rv, object });
    return structuredClone(object);
  }

  #namespaces(): ResourceType {
    return this.registry.byResource("", "v1", "namespaces")!;
  }

  /**
   * Replaces an object. A resourceVersion in the body must be the current one
   * (409 Conflict otherwise); with a status subresource, the main resource keeps
   * its status and `/status` changes only the status. A no-op keeps the version.
   */
  update(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    input: KubeObject,
    options: WriteOptions = {},
  ): KubeObject {
    const ns = this.#namespaceOf(type, namespace);
    const bucket = this.#bucket(type);
    const key = objectKey(ns, name);
    const old = bucket.get(key);
    if (!old) throw notFoundError(type, name);
    checkKind(type, input);
    const body = structuredClone(input);
    const meta = body.metadata ??= {};
    if (meta.name !== undefined && meta.name !== name) {
      throw new ApiError(
        400,
        "BadRequest",
        `the name of the object (${meta.name}) does not match the name on the URL (${name})`,
      );
    }
    if (type.namespaced && meta.namespace && meta.namespace !== ns) {
      throw namespaceMismatchError();
    }
    if (meta.resourceVersion && meta.resourceVersion !== old.metadata!.resourceVersion) {
      throw conflictError(
        type,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    }
    if (meta.uid && meta.uid !== old.metadata!.uid) {
      throw uidPreconditionError(type, name, meta.uid, old.metadata!.uid);
    }
    let next: KubeObject;
    if (options.subresource === "status") {
      next = { ...structuredClone(old), status: body.status };
    } else {
      next = body;
      if (options.admission && type.statusSubresource) {
        if (old.status === undefined) delete next.status;
        else next.status = structuredClone(old.status);
      }
      const oldMeta = old.metadata!;
      next.metadata = {
        ...meta,
        name,
        uid: oldMeta.uid,
        creationTimestamp: oldMeta.creationTimestamp,
        generation: oldMeta.generation,
      };
      if (type.namespaced) next.metadata.namespace = ns;
      if (options.admission || !meta.deletionTimestamp) {
        delete next.metadata.deletionTimestamp;
        if (oldMeta.deletionTimestamp) next.metadata.deletionTimestamp = oldMeta.deletionTimestamp;
      }
    }
    next.apiVersion = apiVersionOf(type);
    next.kind = type.kind;
    if (type.kind === "Event" && type.group === "") validateEvent(next, ns, type);
    type.validate?.(next, ns);
    next.metadata!.resourceVersion = old.metadata!.resourceVersion;
    if (withoutVolatile(next) === withoutVolatile(old)) return structuredClone(old);
    if (specOf(next) !== specOf(old)) {
      next.metadata!.generation = (old.metadata!.generation ?? 0) + 1;
    }
    const finalized = (old.metadata!.finalizers ?? []).length > 0 &&
      (next.metadata!.finalizers ?? []).length === 0;
    if (
      finalized && next.metadata!.deletionTimestamp && !next.metadata!.deletionGracePeriodSeconds
    ) {
      return this.#remove(type, key, next);
    }
    next.metadata!.resourceVersion = String(++this.#rv);
    bucket.set(key, next);
    this.#record({ type: "MODIFIED", typeKey: typeKey(type), rv: this.#rv, object: next, old });
    return structuredClone(next);
  }

  /**
   * Deletes an object and notifies watchers. Finalizers (or `graceful`) turn the
   * delete into setting deletionTimestamp; deleting a namespace deletes what is in it.
   */
  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): KubeObject {
    const ns = this.#namespaceOf(type, namespace);
    const key = objectKey(ns, name);
    const old = this.#bucket(type).get(key);
    if (!old) throw notFoundError(type, name);
    const pre = options.preconditions ?? {};
    if (pre.uid && pre.uid !== old.metadata!.uid) {
      throw uidPreconditionError(type, name, pre.uid, old.metadata!.uid);
    }
    if (pre.resourceVersion && pre.resourceVersion !== old.metadata!.resourceVersion) {
      throw conflictError(
        type,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${
          old.metadata!.resourceVersion
        }`,
      );
    }
    const pending = (old.metadata!.finalizers ?? []).length > 0 ||
      (options.graceful && (options.gracePeriodSeconds ?? 30) > 0);
    if (pending) {
      if (old.metadata!.deletionTimestamp) return structuredClone(old);
      const next = structuredClone(old);
      next.metadata!.deletionTimestamp = timestamp();
      next.metadata!.deletionGracePeriodSeconds = options.gracePeriodSeconds ??
        (options.graceful ? 30 : 0);
      next.metadata!.resourceVersion = String(++this.#rv);
      this.#bucket(type).set(key, next);
      this.#record({ type: "MODIFIED", typeKey: typeKey(type), rv: this.#rv, object: next, old });
      return structuredClone(next);
    }
    if (type.resource === "namespaces" && type.group === "") {
      for (const other of this.registry.all()) {
        if (!other.namespaced) continue;
        for (const [k, object] of [...this.#bucket(other).entries()]) {
          if (object.metadata!.namespace === name) this.#remove(other, k, object);
        }
      }
    }
    return this.#remove(type, key, old);
  }

  #remove(type: ResourceType, key: string, last: KubeObject): KubeObject {
    const old = this.#bucket(type).get(key);
    this.#bucket(type).delete(key);
    const object = structuredClone(last);
    object.metadata!.resourceVersion = String(++this.#rv);
    this.#record({ type: "DELETED", typeKey: typeKey(type), rv: this.#rv, object, old });
    return structuredClone(object);
  }

  /**
   * Registers a watcher from a resourceVersion: undefined, "" or "0" first sends
   * every matching object as ADDED; a version still in the history replays what
   * came after it; an older one gets an ERROR 410 event and the stream ends, as
   * the API server does. Returns the function that unregisters it.
   */
  watch(watcher: Watcher, fromRv?: string): () => void {
    return this.#hub.watch(
      watcher,
      fromRv,
      () => this.list(watcher.type, watcher.filter).items,
    );
  }

  /** Sends a BOOKMARK with the current resourceVersion to every watcher that allows them. */
  bookmark(): void {
    this.#hub.bookmark(this.resourceVersion);
  }

  /** Open watchers, optionally of one resource type. */
  watchers(type?: ResourceType): Watcher[] {
    return this.#hub.watchers(type);
  }

  /** Ends watch streams (all, or those a predicate picks); `error` breaks the connection instead. */
  closeWatches(predicate: (w: Watcher) => boolean = () => true, error = false): number {
    return this.#hub.closeWatches(predicate, error);
  }

  /** Sends ERROR 410 Expired to watchers and ends their streams, as when the watch cache falls behind. */
  expireWatches(predicate: (w: Watcher) => boolean = () => true): number {
    return this.#hub.expireWatches(predicate, this.#rv);
  }

  #record(change: Change): void {
    this.#hub.record(change);
  }
}
