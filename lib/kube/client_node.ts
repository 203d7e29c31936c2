/**
 * The parts of @kubernetes/client-node that Lace uses, and nothing else: the
 * entry point of the Kubernetes client's bundle (`deno task bundle`, see
 * lib/kube/k8s.ts) and, where no bundle is built, the module k8s.ts loads
 * instead. A part used anywhere in lib/ is added here, and reaches its user
 * through k8s.ts, so the whole process holds one copy of the client.
 */
export { KubeConfig } from "@kubernetes/client-node/dist/config.js";
export { ListWatch } from "@kubernetes/client-node/dist/cache.js";
export { Watch } from "@kubernetes/client-node/dist/watch.js";
export { Exec } from "@kubernetes/client-node/dist/exec.js";
export { PatchStrategy } from "@kubernetes/client-node/dist/patch.js";
export { V1MicroTime } from "@kubernetes/client-node/dist/types.js";
export { setHeaderOptions } from "@kubernetes/client-node/dist/middleware.js";
export {
  ObjectAppsV1Api as AppsV1Api,
  ObjectCoordinationV1Api as CoordinationV1Api,
  ObjectCoreV1Api as CoreV1Api,
  ObjectDiscoveryV1Api as DiscoveryV1Api,
  ObjectVersionApi as VersionApi,
} from "@kubernetes/client-node/dist/gen/types/ObjectParamAPI.js";
