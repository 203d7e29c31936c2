/**
 * A small Kubernetes API server for tests, spoken to through the real client
 * library: core `/api/v1/...` and `/apis/<group>/<version>/...` resources held
 * in a `ResourceStore`, with list (selectors, paging, resourceVersion rules),
 * chunked watch streams (BOOKMARK, 410 Gone as an ERROR event), create, update,
 * patch, delete and `/status`, and fault injection (failing requests, closed or
 * expired watches, the server going away and coming back on the same port).
 *
 * Other tests add endpoints (e.g. pods/exec) with `addHandler` in their own files.
 */
import { ApiError, reasonForCode, statusResponse } from "./status.ts";
import { type KubeObject, ResourceRegistry, type ResourceType } from "./resources.ts";
import { ResourceStore } from "./store.ts";
import { discovery, notFoundPath, parseRoute, type Route } from "./routing.ts";
import { serveResource } from "./resource_handler.ts";

export interface TestApiServerOptions {
  /** Resource types served; defaults to `defaultResourceTypes()`. */
  registry?: ResourceRegistry;
  /** Changes a watch can resume from before it gets 410 Gone. */
  historySize?: number;
  /** Send BOOKMARK events this often to watches that allow them; 0: only on `bookmark()`. */
  bookmarkIntervalMs?: number;
  /** DELETE of a pod bound to a node sets deletionTimestamp and keeps it, like with a kubelet. */
  gracefulPodDeletion?: boolean;
  /** Namespaces that exist from the start. */
  namespaces?: string[];
}

export interface RequestRecord {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string;
}

/**
 * An extra endpoint: return a Response to answer, or undefined to let the
 * server route the request normally.
 */
export type ExtraHandler = (
  request: Request,
  route: Route | undefined,
  server: TestApiServer,
) => Response | undefined | Promise<Response | undefined>;

interface Fault {
  remaining: number;
  status: number;
  match: (request: RequestRecord) => boolean;
}

const DEFAULT_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

export class TestApiServer {
  readonly registry: ResourceRegistry;
  readonly store: ResourceStore;
  /** Every request received, in order (method, path, query, content type). */
  readonly requests: RequestRecord[] = [];
  #options: TestApiServerOptions;
  #handlers: ExtraHandler[] = [];
  #faults: Fault[] = [];
  #server?: Deno.HttpServer<Deno.NetAddr>;
  #port = 0;
  #hungShutdown: Promise<void> | undefined;
  #bookmarkTimer?: ReturnType<typeof setInterval>;
  #tempFiles: string[] = [];

  private constructor(options: TestApiServerOptions) {
    this.#options = options;
    this.registry = options.registry ?? new ResourceRegistry();
    this.store = new ResourceStore(this.registry, options.historySize ?? 1000);
    const namespaces = this.registry.byResource("", "v1", "namespaces")!;
    for (const name of options.namespaces ?? DEFAULT_NAMESPACES) {
      this.store.create(namespaces, undefined, {
        metadata: { name },
        status: { phase: "Active" },
      });
    }
  }

  /** Starts a server on 127.0.0.1 with a free port. */
  static async start(options: TestApiServerOptions = {}): Promise<TestApiServer> {
    const server = new TestApiServer(options);
    await server.restart();
    return server;
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  get port(): number {
    return this.#port;
  }

  /** Whether the server is accepting connections. */
  get running(): boolean {
    return this.#server !== undefined;
  }

  /** A kubeconfig (YAML) for this server; `http://` needs insecure-skip-tls-verify with client-node. */
  kubeconfig(namespace = "default"): string {
    return [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: test",
      "  cluster:",
      `    server: ${this.url}`,
      "    insecure-skip-tls-verify: true",
      "contexts:",
      "- name: test",
      "  context:",
      "    cluster: test",
      "    user: test",
      `    namespace: ${namespace}`,
      "current-context: test",
      "users:",
      "- name: test",
      "  user:",
      "    token: test-token",
      "",
    ].join("\n");
  }

  /** Writes the kubeconfig to a temporary file (removed by `close()`) and returns its path. */
  async writeKubeconfig(): Promise<string> {
    const path = await Deno.makeTempFile({ prefix: "lace-kubeconfig-", suffix: ".yaml" });
    await Deno.writeTextFile(path, this.kubeconfig());
    this.#tempFiles.push(path);
    return path;
  }

  /** Adds an endpoint consulted before normal routing; returns its removal. */
  addHandler(handler: ExtraHandler): () => void {
    this.#handlers.push(handler);
    return () => {
      this.#handlers = this.#handlers.filter((h) => h !== handler);
    };
  }

  /** The next `count` requests (those `match` picks, default all) fail with `status`. */
  failNext(
    count: number,
    status = 500,
    match: (request: RequestRecord) => boolean = () => true,
  ): void {
    this.#faults.push({ remaining: count, status, match });
  }

  /** Ends open watch streams cleanly, or with `error: true` breaks their connections. */
  closeWatches(options: { error?: boolean; resource?: string } = {}): number {
    return this.store.closeWatches(
      (w) => !options.resource || w.type.resource === options.resource,
      options.error ?? false,
    );
  }

  /** Sends ERROR 410 Expired on open watches and ends them; also forgets the history. */
  expireWatches(resource?: string): number {
    this.store.compact();
    return this.store.expireWatches((w) => !resource || w.type.resource === resource);
  }

  /** Forgets the change history: resuming from an older resourceVersion gets 410 Gone. */
  compact(): void {
    this.store.compact();
  }

  /** Sends a BOOKMARK now to every watch that allows them. */
  bookmark(): void {
    this.store.bookmark();
  }

  /** Open watches, optionally of one resource ("pods"). */
  watchCount(resource?: string): number {
    return this.store.watchers().filter((w) => !resource || w.type.resource === resource).length;
  }

  /** The type for an object's apiVersion and kind, or a TypeError naming it. */
  typeOf(object: KubeObject): ResourceType {
    const type = this.registry.byKind(object.apiVersion ?? "", object.kind ?? "");
    if (!type) {
      throw new TypeError(
        `Test API server has no resource for "${object.apiVersion}" "${object.kind}"`,
      );
    }
    return type;
  }

  /**
   * Creates or replaces an object directly in the store, as an admin would
   * (status kept as given, namespace need not exist). Watchers are notified.
   */
  put(object: KubeObject): KubeObject {
    const type = this.typeOf(object);
    const ns = object.metadata?.namespace;
    const name = object.metadata?.name ?? "";
    try {
      const current = this.store.get(type, ns, name);
      const next = structuredClone(object);
      next.metadata = { ...next.metadata, resourceVersion: current.metadata?.resourceVersion };
      return this.store.update(type, ns, name, next);
    } catch (error) {
      if (error instanceof ApiError && error.code === 404) {
        return this.store.create(type, ns, object);
      }
      throw error;
    }
  }

  /** Deletes an object directly (no grace period). */
  remove(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    name: string,
  ): KubeObject {
    return this.store.delete(this.typeOf({ apiVersion, kind }), namespace, name);
  }

  /** Makes the server unreachable (connection refused); the port is kept for `restart()`. */
  async stop(options: { leaveWatchesHanging?: boolean } = {}): Promise<void> {
    clearInterval(this.#bookmarkTimer);
    this.#bookmarkTimer = undefined;
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    if (options.leaveWatchesHanging) {
      // New connections are refused, but open watch streams neither end nor fail: what a
      // client sees when a dead server's connection close never reaches it.
      this.#hungShutdown = server.shutdown();
      return;
    }
    this.store.closeWatches();
    await server.shutdown();
    await this.#endHungWatches();
  }

  /** Ends the watches a `stop({ leaveWatchesHanging })` left open, and waits for that server. */
  async #endHungWatches(): Promise<void> {
    const hung = this.#hungShutdown;
    if (!hung) return;
    this.#hungShutdown = undefined;
    this.store.closeWatches();
    await hung;
  }

  /**
   * Listens again on the same port. Like a restarted API server, whose watch
   * cache starts empty, resuming a watch from before the restart gets 410 Gone.
   */
  async restart(): Promise<void> {
    if (this.#server) return;
    if (this.#port !== 0) this.store.compact();
    const listening = Promise.withResolvers<void>();
    this.#server = Deno.serve({
      hostname: "127.0.0.1",
      port: this.#port,
      onListen: () => listening.resolve(),
    }, (request) => this.#handle(request));
    await listening.promise;
    this.#port = this.#server.addr.port;
    const interval = this.#options.bookmarkIntervalMs ?? 0;
    if (interval > 0) this.#bookmarkTimer = setInterval(() => this.store.bookmark(), interval);
  }

  /** Stops the server for good and removes its temporary files. */
  async close(): Promise<void> {
    await this.stop();
    await this.#endHungWatches();
    for (const path of this.#tempFiles.splice(0)) await Deno.remove(path).catch(() => {});
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Parses `/api/v1/...` and `/apis/<group>/<version>/...` paths. */
  route(pathname: string): Route | undefined {
    return parseRoute(pathname, this.registry);
  }

  async #handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const record: RequestRecord = {
      method: request.method,
      path: url.pathname,
      query: url.searchParams,
      contentType: request.headers.get("content-type") ?? "",
    };
    this.requests.push(record);
    try {
      const fault = this.#faults.find((f) => f.remaining > 0 && f.match(record));
      if (fault) {
        fault.remaining--;
        throw new ApiError(
          fault.status,
          reasonForCode(fault.status),
          `injected failure ${fault.status} for ${record.method} ${record.path}`,
        );
      }
      const route = this.route(url.pathname);
      for (const handler of this.#handlers) {
        const response = await handler(request, route, this);
        if (response) return response;
      }
      const answer = discovery(url.pathname, this.registry);
      if (answer) return answer;
      if (!route?.type) throw notFoundPath();
      return await serveResource(
        this.store,
        request,
        url,
        route as Route & { type: ResourceType },
        this.#options.gracefulPodDeletion === true,
      );
    } catch (error) {
      if (error instanceof ApiError) return statusResponse(error);
      return statusResponse(new ApiError(500, "InternalError", String(error)));
    }
  }
}
