/**
 * `helm install` is all it takes, on a real node (tests/node/node.ts) whose network plugin's
 * conflist starts without `lace`: the agent chains it in, keeps it there when the plugin rewrites
 * its file, leaves an unparsable file alone and reports it, and `helm uninstall` gives the file
 * back byte for byte. Prints what it measured.
 */
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { join } from "node:path";
import { nodeUnavailableReason } from "../kube/tools.ts";
import { installLace, uninstallLace, upgradeLace } from "./chart.ts";
import { type Node, startNode } from "./node.ts";
import { NETWORKS } from "./network.ts";
import { waitFor } from "../helpers/wait.ts";
import {
  agentLog,
  failedProbes,
  isReady,
  newPodBecomesReady,
  readyAgentPod,
} from "./pod_checks.ts";
import { PROBE_NAMESPACE, probePod } from "./probe_pods.ts";
import { skipIf } from "../helpers/skip.ts";

const reason = await nodeUnavailableReason();
/** The network plugin's conflist (tests/node/net_plugin_setup.ts). */
const CONFLIST = "10-lace-test.conflist";

const namesLace = (bytes: Uint8Array) =>
  (JSON.parse(new TextDecoder().decode(bytes)).plugins as { type: string }[])
    .some((p) => p.type === "lace");

/** Replaces a file the way a network plugin's installer does: a new file renamed over it. */
async function rewrite(path: string, bytes: Uint8Array) {
  await Deno.writeFile(`${path}.plugin-new`, bytes, { mode: 0o644 });
  await Deno.rename(`${path}.plugin-new`, path);
}

/** A probe pod in network 0 is registered at ADD (the agent's log) and becomes Ready. */
async function registeredAtAdd(core: CoreV1Api, node: Node, name: string, after: string) {
  await newPodBecomesReady(core, node, name, 0, after);
  const log = await agentLog(node);
  assert.match(log, new RegExp(`CNI ADD registered ..${PROBE_NAMESPACE}/${name}\\b`), after);
}

Deno.test({
  name: reason
    ? `helm install chains Lace into the node's CNI configuration (skipped: ${reason})`
    : "helm install chains Lace into the node's CNI configuration",
  ignore: skipIf(reason),
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await using node = await startNode({ chainLace: false });
  const config = node.controlPlane.adminConfig();
  const core = config.makeApiClient(CoreV1Api);
  const apps = config.makeApiClient(AppsV1Api);
  const netConf = join(node.dir, "net.d");
  const conflist = join(netConf, CONFLIST);
  const original = await Deno.readFile(conflist);
  assert.equal(namesLace(original), false, "the fixture's conflist starts without lace");
  const onFailure = async (error: unknown) => {
    console.error(await node.logs(40));
    console.error((await agentLog(node).catch(String)).slice(-8000));
    throw error;
  };

  await t.step(
    "after helm install a new pod is registered at ADD and becomes Ready with no failed probe",
    async () => {
      const began = performance.now();
      await installLace(node).catch(onFailure);
      await waitFor(async () => namesLace(await Deno.readFile(conflist)), {
        timeout: 30_000,
        interval: 50,
        message: "the agent to chain lace into the conflist",
      }).catch(onFailure);
      console.log(
        `conflist chained ${Math.round(performance.now() - began)} ms after helm install`,
      );
      const chained = JSON.parse(await Deno.readTextFile(conflist)).plugins.at(-1);
      assert.deepEqual(chained, {
        type: "lace",
        socket: "/run/lace/cni.sock",
        chainedBy: "lace-agent",
      });
      await node.controlPlane.createNamespace(PROBE_NAMESPACE);
      await registeredAtAdd(core, node, "chained", "after helm install").catch(onFailure);
    },
  );

  await t.step(
    "the network plugin rewrites its file: chained again within a second, and a pod made right after registers at ADD",
    async () => {
      const began = performance.now();
      await rewrite(conflist, original);
      await waitFor(async () => namesLace(await Deno.readFile(conflist)), {
        timeout: 1000,
        interval: 5,
        message: "the rewritten conflist chained again within a second",
      }).catch(onFailure);
      console.log(
        `rewritten conflist chained again after ${Math.round(performance.now() - began)} ms`,
      );
      await registeredAtAdd(core, node, "after-rewrite", "after the plugin's rewrite")
        .catch(onFailure);
    },
  );

  await t.step("a file the agent cannot parse is left alone and reported", async () => {
    // Named to sort after the plugin's file, so the runtime keeps using that one.
    const broken = join(netConf, "20-broken.conflist");
    const text = '{"cniVersion": "1.0.0", "name": "broken", "plugins": [';
    await Deno.writeTextFile(broken, text);
    try {
      await upgradeLace(node, "--set", "node.cni.chainFiles={*.conflist}");
      const event = await waitFor(async () => {
        const events = await core.listNamespacedEvent({ namespace: "default" });
        return events.items.find((e) =>
          e.reason === "CniConfigUnparsable" && e.involvedObject.kind === "Node" &&
          e.message?.includes("20-broken.conflist")
        );
      }, { timeout: 90_000, interval: 250, message: "a CniConfigUnparsable Node Event" })
        .catch(onFailure);
      console.log(`reported: ${event.message}`);
      assert.equal(await Deno.readTextFile(broken), text, "the unparsable file is untouched");
      assert.ok(namesLace(await Deno.readFile(conflist)), "the good file stays chained");
    } finally {
      await Deno.remove(broken);
    }
    await upgradeLace(node);
    await readyAgentPod(core, node).catch(onFailure);
    assert.deepEqual(await failedProbes(core), [], "the agent's upgrades failed no probe");
  });

  await t.step(
    "helm uninstall gives the conflist back byte for byte, and a new pod starts but, with no agent, never becomes Ready",
    async () => {
      await uninstallLace(node);
      await waitFor(async () => {
        const list = await core.listNamespacedPod({ namespace: "lace-system" });
        return list.items.length === 0;
      }, { timeout: 60_000, interval: 250, message: "the agent pod to be gone" });
      assert.equal(
        (await apps.listNamespacedDaemonSet({ namespace: "lace-system" })).items.length,
        0,
      );
      const now = await Deno.readFile(conflist);
      assert.deepEqual(now, original, "the conflist is byte-identical to the original");
      await node.exec(["/opt/cni/bin/lace", "uninstall"]);
      const name = "after-uninstall";
      await core.createNamespacedPod({
        namespace: PROBE_NAMESPACE,
        body: probePod({ name, node: node.name, network: NETWORKS[0].name, portOffset: 0 }),
      });
      // Its sandbox starts (the runtime runs the restored conflist, without lace: the pod gets
      // its address)...
      await waitFor(async () => {
        const pod = await core.readNamespacedPod({ name, namespace: PROBE_NAMESPACE });
        return pod.status?.podIP;
      }, { timeout: 90_000, interval: 250, message: `pod ${name} to get its address` }).catch(
        onFailure,
      );
      // ...and its probes, untagged without an agent, fail: not Ready through either path.
      await waitFor(async () => {
        const failures = await failedProbes(core);
        return failures.some((f) => f.startsWith(`${name}:`));
      }, { timeout: 60_000, interval: 250, message: "the pod's first failed probe" });
      const pod = await core.readNamespacedPod({ name, namespace: PROBE_NAMESPACE });
      assert.equal(isReady(pod), false);
      console.log(
        "after helm uninstall: a new pod runs (the restored conflist has no lace) and is never Ready (no agent tags its probes: neither the CNI path nor the API path)",
      );
    },
  );
});
