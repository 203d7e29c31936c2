/**
 * `lace kubectl`'s work against the API (kubectl_command.ts parses): the agent pod on the node
 * asked, by the chart's labels and spec.nodeName, and an exec of `lace ...` in its agent
 * container over client-node's websocket, its output streamed as it comes.
 */
import type * as k8s from "@kubernetes/client-node";
import { Writable } from "node:stream";
import { apiErrorText, apiStatus } from "../kube/api_error.ts";
import { loadKubeConfig } from "../kube/client.ts";
import { CoreV1Api, Exec, type KubeConfig } from "../kube/k8s.ts";
import { CHART_NAMESPACE, type KubectlOptions, type KubectlRequest } from "./kubectl_args.ts";
import { type AgentPod, chooseAgentPod } from "./kubectl_pods.ts";

/** The agent's container in the chart's DaemonSet, and where deploy/Dockerfile puts lace. */
export const AGENT_CONTAINER = "agent";
export const AGENT_BINARY = "/usr/local/bin/lace";

/** The KubeConfig kubectl would use: --kubeconfig, else KUBECONFIG, else in-cluster; --context. */
export function pluginKubeConfig(options: Pick<KubectlOptions, "kubeconfig" | "context">) {
  const kc = loadKubeConfig({ kubeconfig: options.kubeconfig });
  if (options.context) {
    if (!kc.getContextObject(options.context)) {
      const known = kc.getContexts().map((c) => c.name).join(", ") || "none";
      throw new Error(
        `the kubeconfig has no context ${JSON.stringify(options.context)} (it has ${known}): ` +
          "see kubectl config get-contexts",
      );
    }
    kc.setCurrentContext(options.context);
  }
  return kc;
}

/** The AgentPod view of a Pod. */
export function agentPodOf(pod: k8s.V1Pod): AgentPod {
  const agent = pod.status?.containerStatuses?.find((c) => c.name === AGENT_CONTAINER);
  return {
    namespace: pod.metadata?.namespace ?? "",
    name: pod.metadata?.name ?? "",
    node: pod.spec?.nodeName ?? "",
    phase: pod.status?.phase ?? "Unknown",
    ready: pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    deleting: Boolean(pod.metadata?.deletionTimestamp),
    agentRunning: Boolean(agent?.state?.running),
    created: new Date(pod.metadata?.creationTimestamp ?? 0).getTime(),
  };
}

/** An API call's failure, with what to do: RBAC names the verb the plugin needed. */
function apiFailure(what: string, verb: string, e: unknown, otherwise = ""): Error {
  const status = apiStatus(e);
  if (status === 403) {
    return new Error(
      `${what} was refused (403): RBAC must let you ${verb} (kubectl auth can-i ${verb})` +
        otherwise,
      { cause: e },
    );
  }
  if (status === 401) {
    return new Error(`${what} was refused (401): log in again or check the kubeconfig's user`, {
      cause: e,
    });
  }
  return new Error(`${what} failed: ${apiErrorText(e)}: check the API server is reachable`, {
    cause: e,
  });
}

/** The node `request` runs on: --node, else the node of the pod `doctor pod` names. */
async function nodeOf(core: k8s.CoreV1Api, request: KubectlRequest): Promise<string> {
  if (request.options.node) return request.options.node;
  const { namespace, name } = request.pod!;
  let pod;
  try {
    pod = await core.readNamespacedPod({ namespace, name });
  } catch (e) {
    if (apiStatus(e) === 404) {
      throw new Error(
        `pod ${namespace}/${name} does not exist: check its name (kubectl get pods -n ${namespace})`,
        { cause: e },
      );
    }
    throw apiFailure(`reading pod ${namespace}/${name}`, `get pods -n ${namespace}`, e);
  }
  const node = pod.spec?.nodeName;
  if (!node) {
    throw new Error(
      `pod ${namespace}/${name} is not scheduled on a node yet: no agent has probes of it ` +
        `(kubectl describe pod -n ${namespace} ${name})`,
    );
  }
  return node;
}

/**
 * The agent pod on `node`: in --namespace when given; else in the chart's namespace, and when
 * none is there, in every namespace by the selector.
 */
async function findAgentPod(
  core: k8s.CoreV1Api,
  options: KubectlOptions,
  node: string,
): Promise<AgentPod> {
  const query = { labelSelector: options.selector, fieldSelector: `spec.nodeName=${node}` };
  const inNamespace = async (namespace: string) => {
    try {
      return (await core.listNamespacedPod({ namespace, ...query })).items.map(agentPodOf);
    } catch (e) {
      throw apiFailure(`listing pods in ${namespace}`, `list pods -n ${namespace}`, e);
    }
  };
  const namespace = options.namespace || CHART_NAMESPACE;
  const pods = await inNamespace(namespace);
  if (pods.length > 0 || options.namespace) {
    return chooseAgentPod(pods, node, `in namespace ${namespace} (${options.selector})`);
  }
  let everywhere;
  try {
    everywhere = (await core.listPodForAllNamespaces(query)).items.map(agentPodOf);
  } catch (e) {
    throw apiFailure(
      `no agent pod in ${namespace}, and listing pods in every namespace`,
      "list pods -A",
      e,
      ", or give --namespace",
    );
  }
  return chooseAgentPod(everywhere, node, `in any namespace (${options.selector})`);
}

/** The exit code an exec's status carries: Success 0, NonZeroExitCode its cause, else undefined. */
export function execExitCode(status: k8s.V1Status | undefined): number | undefined {
  if (status?.status === "Success") return 0;
  const cause = status?.details?.causes?.find((c) => c.reason === "ExitCode");
  const code = Number(cause?.message);
  return cause && Number.isInteger(code) ? code : undefined;
}

/** Where the agent's output goes: this process's stdout and stderr, or a test's. */
export interface Output {
  stdout: Writer;
  stderr: Writer;
}
type Writer = { write(p: Uint8Array): Promise<number> };
const STDIO: Output = { stdout: Deno.stdout, stderr: Deno.stderr };

/** A Writable that passes each chunk to `file` as it comes, in order. */
function streamTo(file: Writer): Writable {
  return new Writable({
    async write(chunk: Uint8Array, _encoding, done) {
      try {
        for (let n = 0; n < chunk.length;) n += await file.write(chunk.subarray(n));
        done();
      } catch (e) {
        done(e as Error);
      }
    },
  });
}

/**
 * Runs `command` in the agent container of `pod`, its stdout and stderr on this process's;
 * resolves to its exit code. A refused exec (client-node rejects with a ws ErrorEvent, not an
 * Error) or a session that ends without a status throws, saying what to do.
 */
export async function execInAgent(
  kc: KubeConfig,
  pod: AgentPod,
  command: string[],
  output: Output = STDIO,
): Promise<number> {
  const where = `${pod.namespace}/${pod.name}`;
  let status: k8s.V1Status | undefined;
  const stdout = streamTo(output.stdout);
  const stderr = streamTo(output.stderr);
  let socket;
  try {
    socket = await new Exec(kc).exec(
      pod.namespace,
      pod.name,
      AGENT_CONTAINER,
      command,
      stdout,
      stderr,
      null,
      false,
      (s: k8s.V1Status) => status = s,
    );
  } catch (e) {
    const message = apiErrorText(e);
    // A refused upgrade rejects with a ws ErrorEvent, which says no more than its message.
    const cause = e instanceof Error ? { cause: e } : undefined;
    if (/\b403\b/.test(message)) {
      throw new Error(
        `exec into ${where} was refused (403): RBAC must let you create pods/exec there ` +
          `(kubectl auth can-i create pods/exec -n ${pod.namespace})`,
        cause,
      );
    }
    throw new Error(
      `exec into ${where} failed: ${message}: check the API server reaches the node's kubelet ` +
        `(kubectl logs -n ${pod.namespace} ${pod.name} -c ${AGENT_CONTAINER} goes the same way)`,
      cause,
    );
  }
  await new Promise<void>((resolve) => {
    if (socket.readyState === socket.CLOSED) resolve();
    else socket.addEventListener("close", () => resolve());
  });
  // What the ws delivered before closing may still be on its way to the terminal.
  await Promise.all([stdout, stderr].map((s) => new Promise((r) => s.end(r))));
  const code = execExitCode(status);
  if (code !== undefined) return code;
  throw new Error(
    `lace ${command.slice(1).join(" ")} in ${where} ended without an exit status` +
      `${status?.message ? ` (${status.message})` : ""}: run it again, or kubectl exec -n ` +
      `${pod.namespace} ${pod.name} -c ${AGENT_CONTAINER} -- lace ${command.slice(1).join(" ")}`,
  );
}

/** Runs the request: finds the node's agent pod and its command there; returns its exit code. */
export async function runInAgent(
  request: KubectlRequest,
  output: Output = STDIO,
): Promise<number> {
  const kc = pluginKubeConfig(request.options);
  const core = kc.makeApiClient(CoreV1Api);
  const node = await nodeOf(core, request);
  const pod = await findAgentPod(core, request.options, node);
  return await execInAgent(kc, pod, [AGENT_BINARY, ...request.remote], output);
}
