/**
 * `kubectl lace` as an operator runs it on the real node: the real kubectl finds the plugin
 * deploy/kubectl/kubectl-lace on PATH, which execs `lace kubectl`, here a `lace` that runs this
 * checkout's main.ts.
 */
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { join } from "node:path";
import { kubeToolPath } from "../kube/tools.ts";
import type { Node } from "./node.ts";

const repo = new URL("../../", import.meta.url).pathname;

export interface PluginRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `kubectl ARGS` with the plugin's directory first on PATH and KUBECONFIG `kubeconfig`. */
export async function kubectlLace(node: Node, kubeconfig: string, args: string[]) {
  const bin = join(node.dir, "kubectl-plugin");
  await Deno.mkdir(bin, { recursive: true });
  const lace = join(bin, "lace");
  await Deno.writeTextFile(
    lace,
    `#!/bin/sh\nexec ${Deno.execPath()} run --allow-all --no-prompt ${repo}main.ts "$@"\n`,
    { mode: 0o755 },
  );
  await Deno.remove(join(bin, "kubectl-lace")).catch(() => {});
  await Deno.symlink(join(repo, "deploy/kubectl/kubectl-lace"), join(bin, "kubectl-lace"));
  const output = await new Deno.Command(await kubeToolPath("kubectl"), {
    args,
    env: { PATH: `${bin}:${Deno.env.get("PATH")}`, KUBECONFIG: kubeconfig, NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return {
    code: output.code,
    stdout: text.decode(output.stdout),
    stderr: text.decode(output.stderr),
  } satisfies PluginRun;
}

/**
 * A kubeconfig for a ServiceAccount that may list and get pods in the agent's namespace but
 * not create pods/exec: what an operator with read-only access holds.
 */
export async function readOnlyKubeconfig(node: Node, namespace: string): Promise<string> {
  const plane = node.controlPlane;
  const config = plane.adminConfig();
  const core = config.makeApiClient(CoreV1Api);
  const rbac = config.makeApiClient(RbacAuthorizationV1Api);
  const name = "kubectl-lace-reader";
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [{ kind: "ServiceAccount", name, namespace }],
    },
  });
  return await plane.writeKubeconfigForToken(
    await plane.serviceAccountToken(namespace, name),
    name,
  );
}
