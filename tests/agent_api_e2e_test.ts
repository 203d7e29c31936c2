/**
 * The agent end to end with pods from the Kubernetes API (the repository's
 * test API server, spoken to through the real client library): pods come and
 * go, a conflict becomes an Event, and an API outage leaves the map alone
 * until the agent relists and converges.
 */
import assert from "node:assert/strict";
import { readPinnedTargets } from "../lib/datapath/pins.ts";
import { podFieldSelector } from "../lib/pods/api_source.ts";
import { TestApiServer } from "./api_server/mod.ts";
import type { KubeObject } from "./api_server/mod.ts";
import { agentTestOptions, AgentWorld, POD_IPV4, podManifest } from "./helpers/agent_process.ts";
import { waitFor } from "./helpers/wait.ts";

const pod = (p: Parameters<typeof podManifest>[0]) => podManifest(p) as unknown as KubeObject;

Deno.test({
  name:
    "pods from the API become probe targets, an older-wins conflict is an Event, and deletes are applied",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using api = await TestApiServer.start({ namespaces: ["default", "e2e"] });
    api.put(pod({ name: "a", networkId: 1, httpPort: 8080, tcpPort: 9000 }));
    api.put(
      pod({
        name: "elsewhere",
        networkId: 2,
        httpPort: 8083,
        tcpPort: 9003,
        nodeName: "other-node",
      }),
    );
    const agent = w.startAgent([
      `--kubeconfig=${await api.writeKubeconfig()}`,
      "--address-conflict=older-wins",
    ]);
    await agent.ready();
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(1));
    // The field selector keeps pods of other nodes out.
    assert.equal((await w.probe(POD_IPV4, 8083, "/")).result, "NO_ROUTE");
    assert.ok(
      api.requests.some((r) => r.query.get("fieldSelector") === podFieldSelector("e2e-node")),
    );

    // A newer pod in network 2 claims the same address and port: the older pod keeps it. The
    // server stamps creationTimestamp with whole seconds (and a random uid breaks ties), so
    // "newer" needs a later second.
    const createdA = Date.parse(
      (api.store.get(api.typeOf({ apiVersion: "v1", kind: "Pod" }), "e2e", "a").metadata
        ?.creationTimestamp) as string,
    );
    await waitFor(() => Date.now() >= createdA + 1000, {
      timeout: 10_000,
      message: "the next second",
    });
    api.put(pod({ name: "late", networkId: 2, httpPort: 8080, tcpPort: 9002 }));
    await waitFor(async () => (await w.probe(POD_IPV4, 9002)).result === "reached", {
      timeout: 10_000,
      message: "late's own port reachable",
    });
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(1), "the older pod keeps 8080");
    assert.equal(await agent.metric("lace_target_conflicts"), 2);
    const event = await waitFor(
      () =>
        api.store.list(api.typeOf({ apiVersion: "v1", kind: "Event" }), {}).items.find((e) =>
          (e as { reason?: string }).reason === "ProbeTargetConflict"
        ),
      { timeout: 10_000, message: "a conflict Event" },
    );
    const ev = event as unknown as {
      involvedObject: { name: string };
      type: string;
      message: string;
    };
    assert.equal(ev.involvedObject.name, "late");
    assert.equal(ev.type, "Warning");
    assert.match(ev.message, /10\.244\.1\.10:8080 .*older and keeps it/);
    assert.doesNotMatch(ev.message, /e2e\/a/, "another tenant's pod is never named");

    api.remove("v1", "Pod", "e2e", "late");
    await waitFor(async () => (await w.probe(POD_IPV4, 9002)).result === "NO_ROUTE", {
      timeout: 10_000,
      message: "late's targets gone",
    });
  },
});

Deno.test({
  name: "an API outage leaves the map as it is, and the agent converges after the API returns",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using api = await TestApiServer.start({ namespaces: ["default", "e2e"] });
    api.put(pod({ name: "a", networkId: 1, httpPort: 8080, tcpPort: 9000 }));
    api.put(pod({ name: "b", networkId: 2, httpPort: 8081, tcpPort: 9001 }));
    const agent = w.startAgent([`--kubeconfig=${await api.writeKubeconfig()}`]);
    await agent.ready();
    const before = readPinnedTargets(w.pinPath).length;
    assert.equal(before, 8);

    await api.stop();
    api.closeWatches({ error: true });
    await waitFor(async () => (await agent.metric("lace_watch_restarts_total"))! >= 1, {
      timeout: 10_000,
      message: "the watch to fail and restart",
    });
    // While the API is away, nothing is removed and probes keep working.
    assert.equal(readPinnedTargets(w.pinPath).length, before);
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).body, w.podIn(2));

    // Meanwhile pod b is deleted; the agent learns it from the relist.
    api.remove("v1", "Pod", "e2e", "b");
    await api.restart();
    await waitFor(() => readPinnedTargets(w.pinPath).length === 4, {
      timeout: 30_000,
      message: "pod b removed after the relist",
    });
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).result, "NO_ROUTE");
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(1));
  },
});

Deno.test({
  name: "a kubelet connect to a pod's address on a port that is no target is a Warning Event " +
    "on that pod, naming the destination",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using api = await TestApiServer.start({ namespaces: ["default", "e2e"] });
    api.put(pod({ name: "a", networkId: 1, httpPort: 8080, tcpPort: 9000 }));
    const agent = w.startAgent([`--kubeconfig=${await api.writeKubeconfig()}`]);
    await agent.ready();
    const event = await waitFor(async () => {
      await w.probe(POD_IPV4, 8081);
      return api.store.list(api.typeOf({ apiVersion: "v1", kind: "Event" }), {}).items.find((e) =>
        (e as { reason?: string }).reason === "ProbeTargetMissed"
      );
    }, { timeout: 15_000, message: "a ProbeTargetMissed Event" });
    const ev = event as unknown as {
      involvedObject: { name: string; namespace: string };
      type: string;
      message: string;
    };
    assert.deepEqual([ev.involvedObject.namespace, ev.involvedObject.name], ["e2e", "a"]);
    assert.equal(ev.type, "Warning");
    assert.match(
      ev.message,
      /^the kubelet connected to 10\.244\.1\.10:8081, which is not a probe target of this pod: the probe cannot reach it/,
    );
  },
});
