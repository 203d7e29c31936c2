/**
 * The test API server's reads of a collection: list with selectors, paging
 * and the resourceVersion rules of the real server, and chunked watch streams
 * fed by the store (BOOKMARK and 410 Gone included).
 */
import { ApiError } from "./status.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import type { ResourceStore } from "./store.ts";
import { type Filter, parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import type { Watcher } from "./watch_hub.ts";
import { json, type Route } from "./routing.ts";

/** The label and field selectors of a request, with the fields its type can be selected by. */
export function requestFilter(type: ResourceType, route: Route, query: URLSearchParams): Filter {
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

/** Answers a list request (GET without watch) on a collection. */
export function listResponse(
  store: ResourceStore,
  type: ResourceType,
  route: Route,
  query: URLSearchParams,
): Response {
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
    if (wanted > Number(store.resourceVersion)) {
      throw new ApiError(
        504,
        "Timeout",
        `Too large resource version: ${wanted}, current: ${store.resourceVersion}`,
      );
    }
    if (match === "Exact" && store.isTooOld(wanted)) {
      throw new ApiError(410, "Expired", "The resourceVersion for the provided list is too old.");
    }
  }
  const limit = Number(query.get("limit") ?? "0");
  const result = store.list(
    type,
    requestFilter(type, route, query),
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

/** Answers a watch request: a stream of JSON lines, one watch event each. */
export function watchResponse(
  store: ResourceStore,
  type: ResourceType,
  route: Route,
  query: URLSearchParams,
): Response {
  const filter = requestFilter(type, route, query);
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
      unsubscribe = store.watch(watcher, rv || undefined);
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
