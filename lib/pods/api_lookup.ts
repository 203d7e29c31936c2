/**
 * One pod read from the Kubernetes API by name (GET), for the network of a
 * pod at its CNI ADD when the watch has not delivered its annotations yet.
 * Loaded only where the API is a pod source: it brings the client.
 */
import { CoreV1Api, type KubeConfig } from "../kube/k8s.ts";
import { normalisePod, type Pod } from "./pod.ts";
import type { PodLookup } from "./source.ts";
import { apiStatus } from "../kube/api_error.ts";

/** A PodLookup through the API; a pod that does not exist (404) is undefined. */
export function apiPodLookup(kubeConfig: KubeConfig): PodLookup {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  return {
    async get(namespace: string, name: string): Promise<Pod | undefined> {
      try {
        // Normalised as the watch's pods are: class instances and plain JSON read alike.
        return normalisePod(await api.readNamespacedPod({ name, namespace }));
      } catch (error) {
        if (apiStatus(error) === 404) return undefined;
        throw new Error(`Reading pod ${namespace}/${name} from the API failed`, { cause: error });
      }
    },
  };
}
