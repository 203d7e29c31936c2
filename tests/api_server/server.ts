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
import { apiVersionOf, type KubeObject, ResourceRegistry, type ResourceType } from "./resources.ts";
import { type DeleteOptions, type Filter, ResourceStore, type Watcher } from "./store.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { applyPatch } from "./patch.ts";

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

/** Where a request goes, once parsed. */
export interface Route {
  group: string;
  version: string;
  /** Undefined when the path names no known resource. */
  type?: ResourceType;
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: string;
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

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

function notFoundPath(): ApiError {
  return new ApiError(404, "NotFound", "the server could not find the requested resource");
}

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
  async stop(): Promise<void> {
    clearInterval(this.#bookmarkTimer);
    this.#bookmarkTimer = undefined;
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    this.store.closeWatches();
    await server.shutdown();
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
    for (const path of this.#tempFiles.splice(0)) await Deno.remove(path).catch(() => {});
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Parses `/api/v1/...` and `/apis/<group>/<version>/...` paths. */
  route(pathname: string): Route | undefined {
    const parts = pathname.split("/").filter((p) => p !== "").map(decodeURIComponent);
    let group: string, version: string, rest: string[];
    if (parts[0] === "api" && parts[1] === "v1") {
      [group, version, rest] = ["", "v1", parts.slice(2)];
    } else if (parts[0] === "apis" && parts.length >= 3) {
      [group, version, rest] = [parts[1], parts[2], parts.slice(3)];
    } else {
      return undefined;
    }
    if (rest.length === 0) return undefined;
    const scoped = rest[0] === "namespaces" && rest.length >= 3 &&
      this.registry.byResource(group, version, rest[2])?.namespaced;
    const [namespace, resource, name, subresource] = scoped
      ? [rest[1], rest[2], rest[3], rest[4]]
      : [undefined, rest[0], rest[1], rest[2]];
    if (rest.length > (scoped ? 5 : 3)) return { group, version, resource: rest.join("/") };
    return {
      group,
      version,
      resource,
      namespace,
      name,
      subresource,
      type: this.registry.byResource(group, version, resource),
    };
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
      const discovery = this.#discovery(url.pathname);
      if (discovery) return discovery;
      if (!route?.type) throw notFoundPath();
      return await this.#serve(request, url, route as Route & { type: ResourceType });
    } catch (error) {
      if (error instanceof ApiError) return statusResponse(error);
      return statusResponse(new ApiError(500, "InternalError", String(error)));
    }
  }

  #discovery(pathname: string): Response | undefined {
    const path = pathname.replace(/\/+$/, "");
    if (["/healthz", "/readyz", "/livez"].includes(path)) return new Response("ok");
    if (path === "/version") {
      return json({
        major: "1",
        minor: "33",
        gitVersion: "v1.33.0-lace-test",
        platform: "linux/amd64",
      });
    }
    if (path === "/api") {
      return json({ kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] });
    }
    const types = this.registry.all();
    if (path === "/apis") {
      const groups = [...new Set(types.filter((t) => t.group).map((t) => t.group))];
      return json({
        kind: "APIGroupList",
        apiVersion: "v1",
        groups: groups.map((name) => {
          const versions = [...new Set(types.filter((t) => t.group === name).map((t) => t.version))]
            .map((version) => ({ groupVersion: `${name}/${version}`, version }));
          return { name, versions, preferredVersion: versions[0] };
        }),
      });
    }
    const gv = /^\/api\/(v1)$|^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (!gv) return undefined;
    const [group, version] = gv[1] ? ["", "v1"] : [gv[2], gv[3]];
    const served = types.filter((t) => t.group === group && t.version === version);
    if (served.length === 0) return undefined;
    const verbs = [
      "create",
      "delete",
      "deletecollection",
      "get",
      "list",
      "patch",
      "update",
      "watch",
    ];
    return json({
      kind: "APIResourceList",
      apiVersion: "v1",
      groupVersion: apiVersionOf({ group, version }),
      resources: served.flatMap((t) => [
        {
          name: t.resource,
          singularName: t.kind.toLowerCase(),
          namespaced: t.namespaced,
          kind: t.kind,
          verbs,
        },
        ...(t.statusSubresource
          ? [{
            name: `${t.resource}/status`,
            singularName: "",
            namespaced: t.namespaced,
            kind: t.kind,
            verbs: ["get", "patch", "update"],
          }]
          : []),
      ]),
    });
  }

  async #body(request: Request): Promise<unknown> {
    const text = await request.text();
    if (text.trim() === "") return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new ApiError(
        400,
        "BadRequest",
        `couldn't get version/kind; json parse error: ${error}`,
      );
    }
  }

  #filter(type: ResourceType, route: Route, query: URLSearchParams): Filter {
    return {
      namespace: route.namespace,
      labels: parseLabelSelector(query.get("labelSelector")),
      fields: parseFieldSelector(query.get("fieldSelector"), [
        "metadata.name",
        "metadata.namespace",
        ...(type.fieldLabels ?? []),
      ]),
    };
  }

  async #serve(
    request: Request,
    url: URL,
    route: Route & { type: ResourceType },
  ): Promise<Response> {
    const { type, namespace, name, subresource } = route;
    const query = url.searchParams;
    if (subresource !== undefined && subresource !== "status") throw notFoundPath();
    if (subresource === "status" && !type.statusSubresource) throw notFoundPath();
    const options = { admission: true, subresource: subresource as "status" | undefined };
    if (name === undefined) {
      if (type.namespaced && namespace === undefined && request.method !== "GET") {
        throw notFoundPath();
      }
      switch (request.method) {
        case "GET":
          return ["true", "1"].includes(query.get("watch") ?? "")
            ? this.#watch(request, type, route, query)
            : this.#list(type, route, query);
        case "POST": {
          const body = await this.#body(request) as KubeObject;
          if (!body || typeof body !== "object") {
            throw new ApiError(400, "BadRequest", "request body is empty");
          }
          return json(this.store.create(type, namespace, body, options), 201);
        }
        case "DELETE": {
          const filter = this.#filter(type, route, query);
          const items = this.store.list(type, filter).items
            .map((o) => this.store.delete(type, o.metadata!.namespace, o.metadata!.name!));
          return json({
            kind: `${type.kind}List`,
            apiVersion: apiVersionOf(type),
            metadata: {},
            items,
          });
        }
      }
      throw new ApiError(
        405,
        "MethodNotAllowed",
        `the server does not allow this method on the requested resource`,
      );
    }
    if (type.namespaced && namespace === undefined) throw notFoundPath();
    switch (request.method) {
      case "GET":
        return json(this.store.get(type, namespace, name));
      case "PUT": {
        const body = await this.#body(request) as KubeObject;
        if (!body || typeof body !== "object") {
          throw new ApiError(400, "BadRequest", "request body is empty");
        }
        return json(this.store.update(type, namespace, name, body, options));
      }
      case "PATCH": {
        const patch = await this.#body(request);
        const current = this.store.get(type, namespace, name);
        const patched = applyPatch(current, patch, contentTypeOf(request)) as KubeObject;
        return json(this.store.update(type, namespace, name, patched, options));
      }
      case "DELETE": {
        const body = (await this.#body(request) ?? {}) as {
          preconditions?: DeleteOptions["preconditions"];
          gracePeriodSeconds?: number;
        };
        const grace = query.has("gracePeriodSeconds")
          ? Number(query.get("gracePeriodSeconds"))
          : body.gracePeriodSeconds;
        const current = this.store.get(type, namespace, name);
        const graceful = this.#options.gracefulPodDeletion === true && type.kind === "Pod" &&
          type.group === "" && Boolean((current.spec as { nodeName?: string })?.nodeName);
        return json(this.store.delete(type, namespace, name, {
          preconditions: body.preconditions,
          gracePeriodSeconds: grace,
          graceful,
        }));
      }
    }
    throw new ApiError(
      405,
      "MethodNotAllowed",
      `the server does not allow this method on the requested resource`,
    );
  }

  #list(type: ResourceType, route: Route, query: URLSearchParams): Response {
    const rv = query.get("resourceVersion") ?? "";
    const match = query.get("resourceVersionMatch") ?? "";
    if (match && !rv) {
      throw new ApiError(
        422,
        "Invalid",
        "resourceVersionMatch is forbidden unless resourceVersion is provided",
      );
    }
    if (match && match !== "Exact" && match !== "NotOlderThan") {
      throw new ApiError(422, "Invalid", `resourceVersionMatch: Unsupported value: "${match}"`);
    }
    if (rv && rv !== "0") {
      const wanted = Number(rv);
      if (!Number.isInteger(wanted)) {
        throw new ApiError(400, "BadRequest", `resourceVersion: Invalid value: "${rv}"`);
      }
      if (wanted > Number(this.store.resourceVersion)) {
        throw new ApiError(
          504,
          "Timeout",
          `Too large resource version: ${wanted}, current: ${this.store.resourceVersion}`,
        );
      }
      if (match === "Exact" && this.store.isTooOld(wanted)) {
        throw new ApiError(410, "Expired", "The resourceVersion for the provided list is too old.");
      }
    }
    const limit = Number(query.get("limit") ?? "0");
    const result = this.store.list(
      type,
      this.#filter(type, route, query),
      limit,
      query.get("continue") ?? "",
    );
    const metadata: Record<string, unknown> = { resourceVersion: result.resourceVersion };
    if (result.continue) {
      metadata.continue = result.continue;
      metadata.remainingItemCount = result.remainingItemCount;
    }
    // The API server leaves kind and apiVersion out of list items.
    const items = result.items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
    return json({ kind: `${type.kind}List`, apiVersion: apiVersionOf(type), metadata, items });
  }

  #watch(_request: Request, type: ResourceType, route: Route, query: URLSearchParams): Response {
    const filter = this.#filter(type, route, query);
    const rv = query.get("resourceVersion") ?? "";
    if (rv && !/^\d+$/.test(rv)) {
      throw new ApiError(400, "BadRequest", `resourceVersion: Invalid value: "${rv}"`);
    }
    const encoder = new TextEncoder();
    let unsubscribe = () => {};
    let timer: ReturnType<typeof setTimeout> | undefined;
    let open = true;
    const finish = () => {
      open = false;
      clearTimeout(timer);
      unsubscribe();
    };
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const watcher: Watcher = {
          type,
          filter,
          bookmarks: query.get("allowWatchBookmarks") === "true",
          send: (event) => {
            if (open) controller.enqueue(encoder.encode(JSON.stringify(event) + "\n"));
          },
          close: (error) => {
            if (!open) return;
            finish();
            if (error) controller.error(new Error("watch connection broken by test"));
            else controller.close();
          },
        };
        unsubscribe = this.store.watch(watcher, rv || undefined);
        const timeout = Number(query.get("timeoutSeconds") ?? "0");
        if (open && timeout > 0) timer = setTimeout(() => watcher.close(), timeout * 1000);
      },
      cancel: () => finish(),
    });
    return new Response(body, {
      status: 200,
      headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
    });
  }
}

function contentTypeOf(request: Request): string {
  return request.headers.get("content-type") ?? "";
}
