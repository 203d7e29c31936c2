/**
 * The test API server's verbs on resources: create, update, patch, delete
 * (one or a collection) and `/status`, with lists and watches handed to
 * list_watch.ts.
 */
import { ApiError } from "./status.ts";
import { apiVersionOf, type KubeObject, type ResourceType } from "./resources.ts";
import type { DeleteOptions, ResourceStore } from "./store.ts";
import { applyPatch } from "./patch.ts";
import { json, notFoundPath, type Route } from "./routing.ts";
import { listResponse, requestFilter, watchResponse } from "./list_watch.ts";

/**
 * Answers a request on a known resource type. A DELETE of a pod bound to a
 * node is graceful (deletionTimestamp set, object kept) when
 * `gracefulPodDeletion` is on, as with a kubelet.
 */
export async function serveResource(
  store: ResourceStore,
  request: Request,
  url: URL,
  route: Route & { type: ResourceType },
  gracefulPodDeletion: boolean,
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
          ? watchResponse(store, type, route, query)
          : listResponse(store, type, route, query);
      case "POST": {
        const body = await readBody(request) as KubeObject;
        if (!body || typeof body !== "object") {
          throw new ApiError(400, "BadRequest", "request body is empty");
        }
        return json(store.create(type, namespace, body, options), 201);
      }
      case "DELETE": {
        const filter = requestFilter(type, route, query);
        const items = store.list(type, filter).items
          .map((o) => store.delete(type, o.metadata!.namespace, o.metadata!.name!));
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
      return json(store.get(type, namespace, name));
    case "PUT": {
      const body = await readBody(request) as KubeObject;
      if (!body || typeof body !== "object") {
        throw new ApiError(400, "BadRequest", "request body is empty");
      }
      return json(store.update(type, namespace, name, body, options));
    }
    case "PATCH": {
      const patch = await readBody(request);
      const current = store.get(type, namespace, name);
      const patched = applyPatch(current, patch, contentTypeOf(request)) as KubeObject;
      return json(store.update(type, namespace, name, patched, options));
    }
    case "DELETE": {
      const body = (await readBody(request) ?? {}) as {
        preconditions?: DeleteOptions["preconditions"];
        gracePeriodSeconds?: number;
      };
      const grace = query.has("gracePeriodSeconds")
        ? Number(query.get("gracePeriodSeconds"))
        : body.gracePeriodSeconds;
      const current = store.get(type, namespace, name);
      const graceful = gracefulPodDeletion && type.kind === "Pod" &&
        type.group === "" && Boolean((current.spec as { nodeName?: string })?.nodeName);
      return json(store.delete(type, namespace, name, {
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

async function readBody(request: Request): Promise<unknown> {
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

function contentTypeOf(request: Request): string {
  return request.headers.get("content-type") ?? "";
}
