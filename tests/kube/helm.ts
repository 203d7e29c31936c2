/**
 * Renders Lace's chart with the real helm (built by scripts/build_k8s_tools.sh) and applies the
 * rendered objects to the test control plane through the real client, so the API server
 * validates every object exactly as it would on `helm install`.
 */
import {
  CoreV1Api,
  DiscoveryV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
} from "@kubernetes/client-node";
import { apiStatus } from "../../lib/kube/api_error.ts";
import { parseAllDocuments } from "yaml";
import { Http1KubeConfig } from "../../lib/kube/client.ts";
import { toolPaths } from "./tools.ts";

const chartDir = new URL("../../deploy/helm/lace", import.meta.url).pathname;

export interface HelmTemplateOptions {
  /** Release name (default "lace"). */
  release?: string;
  /** Release namespace (default "lace-system"). */
  namespace?: string;
  /** `--set` values, e.g. ["admissionPolicy.exemptNamespaces={kube-system,infra}"]. */
  set?: string[];
  /** Only these templates, e.g. ["templates/validatingadmissionpolicy.yaml"]. */
  showOnly?: string[];
  /** Chart directory (default deploy/helm/lace). */
  chart?: string;
}

/** Runs `helm template` on the chart and returns the rendered objects. */
export async function helmTemplate(options: HelmTemplateOptions = {}): Promise<KubernetesObject[]> {
  const { helm } = await toolPaths();
  const scratch = await Deno.makeTempDir({ prefix: "lace-helm-" });
  const args = [
    "template",
    options.release ?? "lace",
    options.chart ?? chartDir,
    "--namespace",
    options.namespace ?? "lace-system",
    ...(options.set ?? []).flatMap((value) => ["--set", value]),
    ...(options.showOnly ?? []).flatMap((template) => ["--show-only", template]),
  ];
  try {
    const output = await new Deno.Command(helm, {
      args,
      stdout: "piped",
      stderr: "piped",
      // Keep helm's caches and config out of the user's home.
      env: {
        HELM_CACHE_HOME: `${scratch}/cache`,
        HELM_CONFIG_HOME: `${scratch}/config`,
        HELM_DATA_HOME: `${scratch}/data`,
      },
    }).output();
    if (!output.success) {
      const stderr = new TextDecoder().decode(output.stderr).trim();
      throw new Error(`helm ${args.join(" ")} failed with "${stderr}"`);
    }
    const text = new TextDecoder().decode(output.stdout);
    return parseAllDocuments(text)
      .map((doc) => doc.toJS() as KubernetesObject | null)
      .filter((object): object is KubernetesObject => object !== null && object !== undefined);
  } finally {
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
}

/** A copy of config whose contexts default to namespace; HTTP/1.1 only (see Http1KubeConfig). */
function withNamespace(config: KubeConfig, namespace: string): KubeConfig {
  const copy = new Http1KubeConfig();
  copy.loadFromOptions({
    clusters: config.clusters,
    users: config.users,
    contexts: config.contexts.map((context) => ({ ...context, namespace })),
    currentContext: config.currentContext,
  });
  return copy;
}

/**
 * Creates each object in order (namespaced ones in namespace unless they name their own) and
 * returns what the server stored. The first object the server refuses fails the call, with its
 * kind, name and the server's message.
 */
export async function applyObjects(
  config: KubeConfig,
  objects: KubernetesObject[],
  namespace: string,
): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(withNamespace(config, namespace));
  const created: KubernetesObject[] = [];
  for (const object of objects) {
    try {
      created.push(await api.create(structuredClone(object)));
    } catch (cause) {
      const body = (cause as { body?: unknown }).body;
      const detail = typeof body === "string" ? body : JSON.stringify(body ?? String(cause));
      throw new Error(
        `The API server refused ${object.kind} "${object.metadata?.name}": ${detail}`,
        { cause },
      );
    }
  }
  return created;
}

/**
 * Throws until the chart's Roles of the API server's addresses (in default and kube-public) let
 * the identity of `config` read what the agent reads there (cluster-info may not exist: 404 is an
 * answer).
 */
export async function apiServerRolesApply(config: KubeConfig): Promise<void> {
  const core = config.makeApiClient(CoreV1Api);
  await core.readNamespacedService({ name: "kubernetes", namespace: "default" });
  await config.makeApiClient(DiscoveryV1Api).readNamespacedEndpointSlice({
    name: "kubernetes",
    namespace: "default",
  }).catch((e) => {
    if (apiStatus(e) !== 404) throw e;
  });
  await core.readNamespacedConfigMap({ name: "cluster-info", namespace: "kube-public" }).catch(
    (e) => {
      if (apiStatus(e) !== 404) throw e;
    },
  );
}
