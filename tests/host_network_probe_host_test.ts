/**
 * A host-network pod whose probe sets `host` to another pod's address, played against the real
 * agent process on the simulated node: the map knows a kubelet connection by its destination
 * alone, so the kubelet's connect for the host-network pod's probe, to the victim's address and
 * probe port, is tagged into the victim's network and answered there, whatever pod's probe it
 * serves. The chart's admission policy refuses such a host (tests/kube/vap_test.ts); where it
 * got through (no policy, an exempt namespace, a static pod) the agent says so: a log line, a
 * ProbeIgnored Event and `lace_probes_ignored{reason="host"}`, for probes and hooks alike.
 */
import assert from "node:assert/strict";
import {
  agentTestOptions,
  AgentWorld,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "./helpers/agent_process.ts";
import { startReadyAgent } from "./helpers/agent_checks.ts";
import { metricReaches } from "./helpers/tenant_world.ts";
import { waitFor } from "./helpers/wait.ts";

Deno.test({
  name:
    "a host-network pod's probe and hook aimed at another pod's address and probe port are reported, as the kubelet's connects there land in that pod's network",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    // The victim, in network 2, probes 8081 and 9001 at the simulated pods' addresses.
    const victim = podManifest({ name: "victim", networkId: 2, httpPort: 8081, tcpPort: 9001 });
    const attacker = podManifest({
      name: "attacker",
      networkId: 1,
      httpPort: 8080,
      tcpPort: 9000,
      ips: ["10.99.1.1"],
    });
    const spec = attacker.spec as { hostNetwork?: boolean; containers: Record<string, unknown>[] };
    spec.hostNetwork = true;
    spec.containers[0].readinessProbe = { tcpSocket: { host: POD_IPV4, port: 9001 } };
    spec.containers[0].livenessProbe = { httpGet: { host: "127.0.0.1", port: 9809 } };
    spec.containers[0].lifecycle = {
      postStart: { httpGet: { host: POD_IPV6, port: 8081, path: "/steal" } },
    };
    const agent = await startReadyAgent(w, [victim, attacker]);
    // The exposure the admission policy closes: the kubelet's connects for the attacker's probe
    // and hook go to the victim's keys, which are tagged into network 2.
    for (const [host, port, path] of [[POD_IPV4, 9001], [POD_IPV6, 8081, "/steal"]] as const) {
      const res = await w.probe(host, port, path);
      assert.equal(res.body?.trim(), w.podIn(2), `${host}:${port}: ${JSON.stringify(res)}`);
    }
    await metricReaches(agent, 'lace_probes_ignored{reason="host"}', 2);
    await waitFor(
      () =>
        ["readiness probe", "postStart hook"].every((what) =>
          agent.logs.some((l) =>
            l.includes("e2e/attacker") && l.includes(`${what} of container`) &&
            l.includes("of this host-network pod sets host")
          )
        ),
      { message: "the agent to report the attacker's probe and hook, not its loopback probe" },
    );
    assert.ok(
      !agent.logs.some((l) =>
        l.includes("liveness probe of container") && l.includes("e2e/attacker")
      ),
      "its loopback probe is not reported",
    );
  },
});
