/**
 * Where the agent reports what concerns a pod or the node (a probe ignored,
 * a conflict, a cgroup mismatch). The interface lives apart from the
 * Kubernetes recorder (events.ts) so that code and tests that never talk to the
 * API use the no-op sink without loading client-node.
 */
/** The object an Event is about (core/v1 ObjectReference). */
export interface ObjectRef {
  kind: string;
  apiVersion: string;
  name: string;
  /** Empty or absent for cluster-scoped objects such as a Node. */
  namespace?: string;
  uid?: string;
}

export interface EventSink {
  /** Something went wrong with this object: an Event of type Warning. Never blocks, never throws. */
  warn(object: ObjectRef, reason: string, message: string): void;
  /** Something worth knowing happened: an Event of type Normal. Never blocks, never throws. */
  normal(object: ObjectRef, reason: string, message: string): void;
}

/** Who a pod is, as its Events name it: a pod's metadata or the rules' pod identity has these. */
export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** The reference to a pod for its Events, from its metadata or the rules' pod identity. */
export function podObjectRef(pod: PodRef): ObjectRef {
  return { kind: "Pod", apiVersion: "v1", name: pod.name, namespace: pod.namespace, uid: pod.uid };
}

/** The reference to a node for its Events; the kubelet uses the node name as uid when it has none. */
export function nodeObjectRef(name: string, uid = name): ObjectRef {
  return { kind: "Node", apiVersion: "v1", name, uid };
}

/** Drops every Event: for the agent without the Kubernetes API. */
export const noopEventSink: EventSink = {
  warn() {},
  normal() {},
};
