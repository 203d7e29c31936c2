/**
 * The small Kubernetes surface `lace netcheck` needs, as plain data. The
 * scheduler, readiness wait, lock and report only see this interface; the
 * client-node adapter, the in-memory fake and the netns-based simulated
 * cluster implement it.
 */

/** The part of a probe pod's status that netcheck reads. */
export interface ProbePod {
  name: string;
  /**
   * spec.nodeName, or while unscheduled the node the DaemonSet meant it for
   * (its node affinity on metadata.name); empty if neither is known.
   */
  nodeName: string;
  phase: string;
  /** The Ready condition is True. */
  ready: boolean;
  /** status.podIPs in order. */
  podIPs: string[];
  /** PodScheduled=False with reason Unschedulable (e.g. a cordoned node). */
  unschedulable: boolean;
  /** Waiting/terminated reasons of the containers, by container name. */
  containerReasons: Record<string, string>;
}

export interface ExecResult {
  /** Exit code of the command; -1 when the exec itself failed (see error). */
  exitCode: number;
  stdout: string;
  stderr: string;
  /** Set when the exec session failed, not the command. */
  error?: string;
  /**
   * The output went past EXEC_OUTPUT_LIMIT (exec_output.ts): what came before it is kept, the
   * session was closed, and `error` says so.
   */
  tooLong?: true;
}

export interface ExecOptions {
  /** The session is closed and reported as failed after this long. */
  timeoutMs: number;
  /** Closes the session early (interrupt). */
  signal?: AbortSignal;
}

export interface LeaseRecord {
  name: string;
  holder: string;
  /** Seconds. */
  durationS: number;
  /** Last renewal, ms since epoch. */
  renewTime: number;
  /** Opaque optimistic-concurrency token; empty for a new lease. */
  resourceVersion: string;
  /** Written on create and update as the Lease's owner. */
  owner?: OwnerReference;
}

/** An object that owns others: the garbage collector deletes them once it is gone. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** A create or update lost a race (HTTP 409). */
export class ConflictError extends Error {
  override name = "ConflictError";
}

/** Everything netcheck asks of the API server, nothing more (see docs/netcheck.md RBAC). */
export interface NetcheckCluster {
  /** Creates the namespace unless it exists (namespaces get/create). */
  ensureNamespace(namespace: string): Promise<void>;
  /** Creates the DaemonSet; when it already exists, patches it to this manifest. */
  applyDaemonSet(namespace: string, manifest: Record<string, unknown>): Promise<void>;
  /** status.desiredNumberScheduled, or null when the DaemonSet does not exist. */
  daemonSetDesired(namespace: string, name: string): Promise<number | null>;
  /** Deletes the DaemonSet and its pods (background); a missing one is fine. */
  deleteDaemonSet(namespace: string, name: string): Promise<void>;
  listPods(namespace: string, labelSelector: string): Promise<ProbePod[]>;
  /**
   * Runs a command in a container. Never throws: a failing command has its
   * exit code, a failed or timed-out session has `error`.
   */
  exec(
    namespace: string,
    pod: string,
    container: string,
    command: string[],
    options: ExecOptions,
  ): Promise<ExecResult>;
  getLease(namespace: string, name: string): Promise<LeaseRecord | null>;
  /** Throws ConflictError when it exists. */
  createLease(namespace: string, lease: LeaseRecord): Promise<LeaseRecord>;
  /** Throws ConflictError when the resourceVersion is stale. */
  updateLease(namespace: string, lease: LeaseRecord): Promise<LeaseRecord>;
  deleteLease(namespace: string, name: string): Promise<void>;
  /** The ConfigMap as an owner (configmaps get); clusters without owners leave it out. */
  configMapOwner?(namespace: string, name: string): Promise<OwnerReference>;
}

/** A pod picked for testing: its node and its address of the chosen family. */
export interface Endpoint {
  pod: string;
  node: string;
  address: string;
  /** The pod's namespace when not --namespace (a network of --networks). */
  namespace?: string;
}

/** An endpoint and the network (index into --networks) its pod is in. */
export interface NetworkEndpoint extends Endpoint {
  network: number;
}
