/**
 * The probe DaemonSets and the Lease as dependents of an owner in their namespace (the chart's
 * netcheck ConfigMap, --owner-configmap): when the owner is deleted, Kubernetes' garbage collector
 * deletes them, also when the runner could not. Helm deletes the runner's Deployment together with
 * its RBAC, so the runner's own clean-up on SIGTERM may be refused (seen on two real nodes: a
 * release disabled with `netcheck.createNamespace=false` left both DaemonSets, their pods and the
 * Lease); the garbage collector needs no permission of the runner's.
 */
import { SetupError } from "./errors.ts";
import type { NetcheckCluster, OwnerReference } from "./netcheck_cluster.ts";

/**
 * `cluster` with `owner` (in `namespace`) written as the owner of every DaemonSet and Lease it
 * creates or updates in that namespace; objects in other namespaces (--networks namespaces)
 * are left alone, as an owner in another namespace would have them deleted at once.
 */
export function ownedBy(
  cluster: NetcheckCluster,
  namespace: string,
  owner: OwnerReference,
): NetcheckCluster {
  const wrapped: Partial<NetcheckCluster> = {
    applyDaemonSet: (ns, manifest) => {
      if (ns !== namespace) return cluster.applyDaemonSet(ns, manifest);
      const metadata = manifest.metadata as Record<string, unknown>;
      return cluster.applyDaemonSet(ns, {
        ...manifest,
        metadata: { ...metadata, ownerReferences: [owner] },
      });
    },
    createLease: (ns, lease) =>
      cluster.createLease(ns, ns === namespace ? { ...lease, owner } : lease),
    updateLease: (ns, lease) =>
      cluster.updateLease(ns, ns === namespace ? { ...lease, owner } : lease),
  };
  return new Proxy(cluster, {
    get(target, prop, receiver) {
      if (prop in wrapped) return wrapped[prop as keyof NetcheckCluster];
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `cluster` owned by the ConfigMap `name` in `namespace`, or a SetupError saying why not. */
export async function ownedByConfigMap(
  cluster: NetcheckCluster,
  namespace: string,
  name: string,
): Promise<NetcheckCluster> {
  if (!cluster.configMapOwner) {
    throw new SetupError("--owner-configmap: this cluster has no owners to give");
  }
  let owner: OwnerReference;
  try {
    owner = await cluster.configMapOwner(namespace, name);
  } catch (e) {
    throw new SetupError(
      `Cannot read ConfigMap "${namespace}/${name}" (--owner-configmap; configmaps get): ` +
        (e as Error).message,
    );
  }
  return ownedBy(cluster, namespace, owner);
}
