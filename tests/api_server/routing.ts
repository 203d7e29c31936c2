/**
 * How the test API server reads a request path: `/api/v1/...` and
 * `/apis/<group>/<version>/...` parsed into a Route, and the discovery
 * endpoints (/version, /api, /apis, group versions) the client library asks
 * before it lists anything.
 */
import { ApiError } from "./status.ts";
import { apiVersionOf, type ResourceRegistry, type ResourceType } from "./resources.ts";

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

/** A JSON response, as the API server sends it. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

export function notFoundPath(): ApiError {
  return new ApiError(404, "NotFound", "the server could not find the requested resource");
}

/** Parses `/api/v1/...` and `/apis/<group>/<version>/...` paths. */
export function parseRoute(pathname: string, registry: ResourceRegistry): Route | undefined {
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
    registry.byResource(group, version, rest[2])?.namespaced;
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
    type: registry.byResource(group, version, resource),
  };
}

/** Answers health, version and discovery paths; undefined for any other path. */
export function discovery(pathname: string, registry: ResourceRegistry): Response | undefined {
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
  const types = registry.all();
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
