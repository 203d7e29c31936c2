/**
 * The real node's pod network as the runtime finds it: the test network plugin (net_plugin.ts)
 * behind a launcher in the node's CNI directory, its identity in the cluster, and the conflist
 * that chains it with `lace`.
 */
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { join } from "node:path";
import type { ControlPlane } from "../kube/fixture.ts";
import type { NodeNamespaces } from "./namespaces.ts";
import { NETWORKS, POD_SUBNET4, POD_SUBNET6 } from "./network.ts";
import { conflist, type ConflistSettings } from "./node_config.ts";

/**
 * A token of kube-system/lace-cni, the network plugin's ServiceAccount (the chart's default
 * admissionPolicy.networkAnnotationWriters), allowed to read and annotate pods.
 */
export async function networkPluginToken(plane: ControlPlane): Promise<string> {
  const config = plane.adminConfig();
  const core = config.makeApiClient(CoreV1Api);
  const rbac = config.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({
    namespace: "kube-system",
    body: { metadata: { name: "lace-cni" } },
  });
  await rbac.createClusterRole({
    body: {
      metadata: { name: "lace-test-cni" },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "patch"] }],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: "lace-test-cni" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "lace-test-cni",
      },
      subjects: [{ kind: "ServiceAccount", name: "lace-cni", namespace: "kube-system" }],
    },
  });
  return await plane.serviceAccountToken("kube-system", "lace-cni", 4 * 3600);
}

const CONFLIST = "10-lace-test.conflist";

/**
 * Takes the chained `lace` plugin out of the conflist in `netConf`; returns the function that puts
 * it back. Each version is written beside and renamed over the conflist: containerd rereads its
 * CNI directory on a rename (it ignores the creation of a file), never seeing half a file.
 */
export async function unchainLace(netConf: string): Promise<() => Promise<void>> {
  const path = join(netConf, CONFLIST);
  const original = await Deno.readTextFile(path);
  const list = JSON.parse(original) as { plugins: { type: string }[] };
  list.plugins = list.plugins.filter((plugin) => plugin.type !== "lace");
  const replace = async (text: string) => {
    await Deno.writeTextFile(`${path}.next`, text, { mode: 0o644 });
    await Deno.rename(`${path}.next`, path);
  };
  await replace(JSON.stringify(list, null, 2));
  return () => replace(original);
}

/** The network plugin's state directory on the node of run directory `dir`. */
export function pluginStateDir(dir: string): string {
  return join(dir, "ipam");
}

export interface NetPluginOptions {
  /** The run's directory: the launcher and the plugin's IPAM state go there. */
  dir: string;
  node: NodeNamespaces;
  /** The CNI plugins' directory inside the node. */
  cniBin: string;
  /** The CNI configuration directory containerd reads. */
  netConf: string;
  apiServer: string;
  caFile: string;
  /** The network plugin's token (networkPluginToken) in a file. */
  tokenFile: string;
  /**
   * Settings other than the first node's defaults (its pod ranges, `lace` chained); a
   * `laceSocket` of undefined chains no `lace` plugin.
   */
  overrides?: Partial<ConflistSettings>;
}

/**
 * Installs our plugin's launcher in the node, then writes the conflist naming it and (unless
 * overridden) `lace`.
 */
export async function installNetPlugin(o: NetPluginOptions): Promise<void> {
  const deno = Deno.execPath();
  const plugin = new URL("./net_plugin.ts", import.meta.url).pathname;
  const pluginHome = join(o.dir, "plugin");
  await Deno.mkdir(pluginHome);
  const launcher = join(pluginHome, "lace-testnet");
  await Deno.writeTextFile(
    launcher,
    `#!/bin/sh\nexec ${deno} run --allow-all --no-prompt --quiet --no-lock ${plugin}\n`,
    { mode: 0o755 },
  );
  await o.node.exec(["cp", launcher, `${o.cniBin}/lace-testnet`]);
  await Deno.writeTextFile(
    join(o.netConf, CONFLIST),
    conflist({
      networks: NETWORKS,
      subnet4: POD_SUBNET4,
      subnet6: POD_SUBNET6,
      stateDir: pluginStateDir(o.dir),
      apiServer: o.apiServer,
      caFile: o.caFile,
      tokenFile: o.tokenFile,
      laceSocket: "/run/lace/cni.sock",
      ...o.overrides,
    }),
    { mode: 0o644 },
  );
}
