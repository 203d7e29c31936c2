/**
 * The resource types the test API server serves. Each says where it lives
 * (group/version/resource), whether it is namespaced, whether it has a status
 * subresource and which field selectors it supports, as the real server's
 * registry does. Tests register more with `ResourceRegistry.register`.
 */

export interface ResourceType {
  /** "" for the core group. */
  group: string;
  version: string;
  /** Plural lower-case name used in URLs, e.g. "pods". */
  resource: string;
  kind: string;
  namespaced: boolean;
  /** Has a `/status` subresource: the main resource cannot change status, and vice versa. */
  statusSubresource?: boolean;
  /** Status a created object gets (the server resets status on create). */
  initialStatus?: () => Record<string, unknown>;
  /** Field selector keys beyond metadata.name and metadata.namespace. */
  fieldLabels?: string[];
  /** Extra validation on create and update; throw ApiError to reject. */
  validate?: (object: KubeObject, namespace: string) => void;
}

/** Any Kubernetes object, as JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [key: string]: unknown;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  [key: string]: unknown;
}

/** "v1" or "apps/v1". */
export function apiVersionOf(type: Pick<ResourceType, "group" | "version">): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** "pods" or "daemonsets.apps", as the API server names resources in messages. */
export function qualifiedResource(type: Pick<ResourceType, "group" | "resource">): string {
  return type.group ? `${type.resource}.${type.group}` : type.resource;
}

const POD_FIELDS = [
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.schedulerName",
  "spec.serviceAccountName",
  "spec.hostNetwork",
  "status.phase",
  "status.podIP",
  "status.nominatedNodeName",
];

const EVENT_FIELDS = [
  "involvedObject.kind",
  "involvedObject.namespace",
  "involvedObject.name",
  "involvedObject.uid",
  "involvedObject.apiVersion",
  "involvedObject.resourceVersion",
  "involvedObject.fieldPath",
  "reason",
  "reportingComponent",
  "source",
  "type",
];

/** The types every test server starts with. */
export function defaultResourceTypes(): ResourceType[] {
  return [
    {
      group: "",
      version: "v1",
      resource: "pods",
      kind: "Pod",
      namespaced: true,
      statusSubresource: true,
      initialStatus: () => ({ phase: "Pending" }),
      fieldLabels: POD_FIELDS,
    },
    {
      group: "",
      version: "v1",
      resource: "events",
      kind: "Event",
      namespaced: true,
      fieldLabels: EVENT_FIELDS,
    },
    {
      group: "",
      version: "v1",
      resource: "namespaces",
      kind: "Namespace",
      namespaced: false,
      statusSubresource: true,
      initialStatus: () => ({ phase: "Active" }),
      fieldLabels: ["status.phase"],
    },
    {
      group: "",
      version: "v1",
      resource: "nodes",
      kind: "Node",
      namespaced: false,
      statusSubresource: true,
      fieldLabels: ["spec.unschedulable"],
    },
    {
      group: "",
      version: "v1",
      resource: "services",
      kind: "Service",
      namespaced: true,
      statusSubresource: true,
    },
    { group: "", version: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true },
    {
      group: "",
      version: "v1",
      resource: "secrets",
      kind: "Secret",
      namespaced: true,
      fieldLabels: ["type"],
    },
    {
      group: "",
      version: "v1",
      resource: "serviceaccounts",
      kind: "ServiceAccount",
      namespaced: true,
    },
    {
      group: "apps",
      version: "v1",
      resource: "daemonsets",
      kind: "DaemonSet",
      namespaced: true,
      statusSubresource: true,
    },
    {
      group: "apps",
      version: "v1",
      resource: "deployments",
      kind: "Deployment",
      namespaced: true,
      statusSubresource: true,
    },
    {
      group: "coordination.k8s.io",
      version: "v1",
      resource: "leases",
      kind: "Lease",
      namespaced: true,
    },
    { group: "events.k8s.io", version: "v1", resource: "events", kind: "Event", namespaced: true },
  ];
}

/** Lookup of resource types by URL and by apiVersion/kind. */
export class ResourceRegistry {
  #types = new Map<string, ResourceType>();

  constructor(types: ResourceType[] = defaultResourceTypes()) {
    for (const type of types) this.register(type);
  }

  /** Adds or replaces a type (e.g. a CRD a test needs). */
  register(type: ResourceType): void {
    this.#types.set(`${type.group}/${type.version}/${type.resource}`, type);
  }

  byResource(group: string, version: string, resource: string): ResourceType | undefined {
    return this.#types.get(`${group}/${version}/${resource}`);
  }

  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    for (const type of this.#types.values()) {
      if (apiVersionOf(type) === apiVersion && type.kind === kind) return type;
    }
    return undefined;
  }

  all(): ResourceType[] {
    return [...this.#types.values()];
  }
}
