/**
 * Tenants on the test control plane: a ServiceAccount bound to a ClusterRole (`edit` filled as
 * the aggregation controller would), a client that authenticates as it, and the verdict of a
 * call it makes. Shared by the tests that play a hostile tenant against the API server.
 */
import {
  ApiException,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
} from "@kubernetes/client-node";
import { Http1KubeConfig } from "../../lib/kube/client.ts";
import type { ControlPlane } from "./fixture.ts";

/** The tenant's namespace. */
export const TENANT_NS = "team-a";

/** 200 when the server accepts the call, else its status code and message. */
export async function verdict(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
    return { code: 200, message: "" };
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    return { code: error.code, message: String(error.body) };
  }
}

/**
 * Creates a ServiceAccount bound to a ClusterRole (created from `rules` when given), in one
 * namespace (`bindIn`) or cluster-wide, and returns a client that authenticates as it.
 */
export async function account(
  cp: ControlPlane,
  who: { namespace: string; name: string; role: string },
  how: { rules?: V1PolicyRule[]; bindIn?: string },
): Promise<CoreV1Api> {
  const admin = cp.adminConfig();
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccount({
    namespace: who.namespace,
    body: { metadata: { name: who.name } },
  });
  if (how.rules) {
    await rbac.createClusterRole({ body: { metadata: { name: who.role }, rules: how.rules } });
  }
  const binding = {
    metadata: { name: `${who.name}-${who.role}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: who.role },
    subjects: [{ kind: "ServiceAccount", namespace: who.namespace, name: who.name }],
  };
  if (how.bindIn) await rbac.createNamespacedRoleBinding({ namespace: how.bindIn, body: binding });
  else await rbac.createClusterRoleBinding({ body: binding });
  const config = new Http1KubeConfig();
  const token = await cp.serviceAccountToken(who.namespace, who.name);
  config.loadFromString(cp.kubeconfigForToken(token, who.name));
  return config.makeApiClient(CoreV1Api);
}

/**
 * Fills an aggregated ClusterRole (such as `edit`, which aggregates `view`) from the roles its
 * selectors match, as the controller manager's aggregation controller does: the test control
 * plane has none. Returns the role's rules.
 */
export async function aggregateClusterRole(
  rbac: RbacAuthorizationV1Api,
  name: string,
): Promise<V1PolicyRule[]> {
  const role = await rbac.readClusterRole({ name });
  if (!role.aggregationRule) return role.rules ?? [];
  const rules: V1PolicyRule[] = [];
  for (const selector of role.aggregationRule.clusterRoleSelectors ?? []) {
    const labelSelector = Object.entries(selector.matchLabels ?? {})
      .map(([key, value]) => `${key}=${value}`).join(",");
    for (const part of (await rbac.listClusterRole({ labelSelector })).items) {
      rules.push(...await aggregateClusterRole(rbac, part.metadata!.name!));
    }
  }
  await rbac.replaceClusterRole({ name, body: { ...role, rules } });
  return rules;
}
