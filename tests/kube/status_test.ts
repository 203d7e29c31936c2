/**
 * `lace status`, the chart's `helm test`, against the real API server as the chart's test
 * ServiceAccount (its Role alone): the agents are the DaemonSet's pods as the chart renders it,
 * their status written as a kubelet would, and their node listeners stand-in servers on loopback
 * addresses (the pods' hostIP) answering /readyz and /metrics as the agent does. The real agent
 * and kubelet are tests/node/real_node_test.ts's.
 */
import assert from "node:assert/strict";
import { AppsV1Api, CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { startControlPlane } from "./fixture.ts";
import { applyObjects, helmTemplate } from "./helm.ts";
import { chartOnControlPlaneUnavailableReason, controlPlaneTestOptions } from "./tools.ts";
import { waitFor } from "../helpers/wait.ts";

const unavailable = await chartOnControlPlaneUnavailableReason();
const SYSTEM = "lace-system";
const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** A stand-in agent listener: what /readyz and /metrics answer, changed by the test. */
interface StandIn {
  ready: string | undefined;
  attached: number;
}

/** Serves each stand-in on its own loopback address, all on one port; returns the port. */
async function serveStandIns(
  agents: Record<string, StandIn>,
  disposer: AsyncDisposableStack,
): Promise<number> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const servers: Deno.HttpServer<Deno.NetAddr>[] = [];
    try {
      let port = 0;
      for (const [ip, agent] of Object.entries(agents)) {
        const server = Deno.serve({ hostname: ip, port, onListen: () => {} }, (req) => {
          const path = new URL(req.url).pathname;
          if (path === "/readyz") {
            return agent.ready === undefined
              ? new Response("ok\n")
              : new Response(`not ready: ${agent.ready}\n`, { status: 503 });
          }
          if (path === "/metrics") {
            return new Response(
              `lace_attached{program="connect4"} ${agent.attached}\n` +
                `lace_attached{program="connect6"} 1\n`,
            );
          }
          return new Response("Not found\n", { status: 404 });
        });
        servers.push(server);
        port = server.addr.port;
      }
      for (const s of servers) disposer.defer(() => s.shutdown());
      return port;
    } catch (e) {
      // Another process held the first server's port on a later address: try another port.
      if (!(e instanceof Deno.errors.AddrInUse)) throw e;
      await Promise.all(servers.map((s) => s.shutdown()));
    }
  }
  throw new Error("No port free on every stand-in address");
}

/** `lace status` as a process: its exit code and output. */
async function laceStatus(kubeconfig: string, port: number) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--quiet",
      MAIN,
      "status",
      `--kubeconfig=${kubeconfig}`,
      `--daemonset=${SYSTEM}/lace`,
      `--metrics-port=${port}`,
    ],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test({
  name:
    "lace status, as helm test's ServiceAccount, passes when every node's agent is attached and ready, and fails naming the node otherwise",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  await using disposer = new AsyncDisposableStack();
  const admin = cp.adminConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const apps = admin.makeApiClient(AppsV1Api);
  await cp.createNamespace(SYSTEM);
  const chart = await helmTemplate({ namespace: SYSTEM, set: ["admissionPolicy.enabled=false"] });
  // The test pod is helm test's to run, not this test's.
  await applyObjects(admin, chart.filter((o) => o.kind !== "Pod"), SYSTEM);
  const kubeconfig = await cp.writeKubeconfigForToken(
    await cp.serviceAccountToken(SYSTEM, "lace-test"),
    "lace-test",
  );

  // Two nodes, as the DaemonSet controller and the kubelets would report them.
  const agents: Record<string, StandIn> = {
    "127.0.0.2": { ready: undefined, attached: 1 },
    "127.0.0.3": { ready: undefined, attached: 1 },
  };
  const port = await serveStandIns(agents, disposer);
  const ds = await apps.readNamespacedDaemonSet({ name: "lace", namespace: SYSTEM });
  await apps.replaceNamespacedDaemonSetStatus({
    name: "lace",
    namespace: SYSTEM,
    body: {
      ...ds,
      status: {
        currentNumberScheduled: 2,
        desiredNumberScheduled: 2,
        numberMisscheduled: 0,
        numberReady: 2,
      },
    },
  });
  const agentPod = async (node: string, ip: string, ready: boolean) => {
    const name = `lace-${node}`;
    const body: V1Pod = {
      metadata: {
        name,
        labels: ds.spec!.template.metadata!.labels,
        ownerReferences: [{
          apiVersion: "apps/v1",
          kind: "DaemonSet",
          name: "lace",
          uid: ds.metadata!.uid!,
          controller: true,
        }],
      },
      spec: { ...ds.spec!.template.spec!, nodeName: node },
    };
    const created = await core.readNamespacedPod({ name, namespace: SYSTEM }).catch(() =>
      core.createNamespacedPod({ namespace: SYSTEM, body })
    );
    await core.replaceNamespacedPodStatus({
      name,
      namespace: SYSTEM,
      body: {
        ...created,
        status: {
          phase: "Running",
          hostIP: ip,
          podIP: ip,
          conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
        },
      },
    });
  };
  await agentPod("node-a", "127.0.0.2", true);
  await agentPod("node-b", "127.0.0.3", true);
  // A pod of another owner with the same labels is no agent of this DaemonSet.
  await core.createNamespacedPod({
    namespace: SYSTEM,
    body: {
      metadata: { name: "lookalike", labels: ds.spec!.template.metadata!.labels },
      spec: { ...ds.spec!.template.spec!, nodeName: "node-c" },
    },
  });

  await t.step("every node's agent attached and ready: exit 0, both nodes listed", async () => {
    // The Role reaches the authorizer's cache shortly after it is created.
    const run = await waitFor(async () => {
      const r = await laceStatus(kubeconfig, port);
      return r.code === 0 ? r : undefined;
    }, { timeout: 30_000, interval: 500, message: "lace status to pass" })
      .catch(async (e) => {
        const r = await laceStatus(kubeconfig, port);
        throw new Error(`${(e as Error).message}: ${r.stdout}${r.stderr}`);
      });
    assert.match(run.stdout, /^node-a\s+lace-node-a\s+yes\s+connect4,connect6\s+-$/m);
    assert.match(run.stdout, /^node-b\s+lace-node-b\s+yes\s+connect4,connect6\s+-$/m);
    assert.doesNotMatch(run.stdout, /lookalike/);
    assert.match(run.stdout, /Every node's agent is attached and ready: 2 of 2/);
  });

  await t.step(
    "an agent Ready in the API whose program is detached: exit 1, naming it",
    async () => {
      agents["127.0.0.3"].attached = 0;
      const run = await laceStatus(kubeconfig, port);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(
        run.stdout,
        /^node-b\s+lace-node-b\s+yes\s+connect6\s+not attached: lace_attached\{program="connect4"\} 0$/m,
      );
      assert.match(
        run.stdout,
        /Not every node's agent is attached and ready: 1 of 2 agent pods failing/,
      );
    },
  );

  await t.step("an agent that is not ready: exit 1 with its reason", async () => {
    Object.assign(agents["127.0.0.3"], { ready: "probe programs are not attached" });
    await agentPod("node-b", "127.0.0.3", false);
    const run = await laceStatus(kubeconfig, port);
    assert.equal(run.code, 1, run.stdout + run.stderr);
    assert.match(
      run.stdout,
      /node-b\s+lace-node-b\s+no .*the pod is not Ready \(pod Running\); not ready: probe programs are not attached/,
    );
  });

  await t.step(
    "a node whose agent pod is gone: exit 1, the DaemonSet's count says so",
    async () => {
      Object.assign(agents["127.0.0.3"], { ready: undefined, attached: 1 });
      await core.deleteNamespacedPod({
        name: "lace-node-b",
        namespace: SYSTEM,
        gracePeriodSeconds: 0,
      });
      const run = await laceStatus(kubeconfig, port);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(
        run.stdout,
        /problem: 1 of 2 nodes run no agent pod of DaemonSet lace-system\/lace/,
      );
    },
  );

  await t.step("an identity without the test's Role is told which right it lacks", async () => {
    await core.createNamespacedServiceAccount({
      namespace: SYSTEM,
      body: { metadata: { name: "nobody" } },
    });
    const other = await cp.writeKubeconfigForToken(
      await cp.serviceAccountToken(SYSTEM, "nobody"),
      "nobody",
    );
    const run = await laceStatus(other, port);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /^lace status: cannot read DaemonSet lace-system\/lace: .*its identity needs get on daemonsets "lace" in lace-system/m,
    );
  });
});
