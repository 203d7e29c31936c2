/**
 * The agent end to end, as a real process on the simulated node: pods from the directory source
 * registered, added and removed, with a kubelet-like prober in the kubelet cgroup and the real
 * kernel deciding where each connect goes.
 */
import { join } from "node:path";
import assert from "node:assert/strict";
import { agentTestOptions, AgentWorld, POD_A, POD_IPV4 } from "./helpers/agent_process.ts";
import { assertReaches, POD_B, probesOf, startReadyAgent } from "./helpers/agent_checks.ts";
import { waitFor } from "./helpers/wait.ts";

Deno.test({
  name: "the agent registers every probe of the directory's pods across overlapping networks",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await startReadyAgent(w, [POD_A, POD_B]);
    await assertReaches(w, 1, 8080, 9000);
    await assertReaches(w, 2, 8081, 9001);
    for (const [host, port, http] of [...probesOf(8080, 9000), ...probesOf(8081, 9001)]) {
      const res = await w.probe(host, port, http, "other");
      assert.notEqual(
        res.result,
        "reached",
        `${host}:${port} from another cgroup must not be tagged`,
      );
    }
    // A port no probe uses is not tagged, even from the kubelet.
    assert.equal((await w.probe(POD_IPV4, 8082, "/")).result, "NO_ROUTE");
  },
});

Deno.test({
  name:
    "a pod in a YAML manifest is registered: the agent loads its YAML parser with the first one",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await startReadyAgent(w, [POD_A]);
    // JSON is YAML too: the .yaml name is what sends the file through the YAML parser.
    const tmp = join(w.podsDir, ".b.tmp");
    await Deno.writeTextFile(tmp, JSON.stringify(POD_B));
    await Deno.rename(tmp, join(w.podsDir, "b.yaml"));
    await waitFor(async () => (await w.probe(POD_IPV4, 8081, "/")).result === "reached", {
      timeout: 10_000,
      message: "the YAML manifest's pod reachable",
    });
    await assertReaches(w, 2, 8081, 9001);
  },
});

Deno.test({
  name: "a pod added to the directory becomes reachable and a removed one loses its targets",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A]);
    const sample = 'lace_probe_targets{family="ipv4",network_id="2"}';
    assert.equal(await agent.metric(sample), undefined);

    await w.writePod(POD_B);
    await waitFor(async () => (await w.probe(POD_IPV4, 8081, "/")).result === "reached", {
      timeout: 10_000,
      message: "pod b reachable",
    });
    await assertReaches(w, 2, 8081, 9001);
    assert.equal(await agent.metric(sample), 2);
    assert.ok((await agent.metric('lace_connects_tagged_total{family="ipv4"}'))! >= 1);

    await w.removePod("b");
    await waitFor(async () => (await w.probe(POD_IPV4, 8081, "/")).result === "NO_ROUTE", {
      timeout: 10_000,
      message: "pod b's targets gone",
    });
    const { body } = await agent.local("/targets");
    const pods = new Set((JSON.parse(body) as { pod: string }[]).map((t) => t.pod));
    assert.deepEqual([...pods], ["e2e/a"]);
    // The series of a network without targets is gone, not stuck at its last value.
    assert.equal(await agent.metric(sample), undefined);
    assert.equal(await agent.metric('lace_probe_targets{family="ipv4",network_id="1"}'), 2);
    await assertReaches(w, 1, 8080, 9000);
  },
});
