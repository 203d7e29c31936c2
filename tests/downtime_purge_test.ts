/**
 * Agent downtime, played on the kernel: while the agent is stopped the pinned probe map keeps what
 * it wrote last, a pod is deleted and the node attaches its address to a pod of another network.
 * The chained `lace` plugin finds no agent and removes the map's entries at the new pod's
 * addresses itself (every port, any network), so the kubelet's probes there are tagged into no
 * network until the agent is back and writes the new pod's. Were the ADD only to fail open, the
 * kubelet stand-in's probe of the old pod's port would still be tagged into the old network.
 */
import assert from "node:assert/strict";
import { defaultConfig } from "../lib/config.ts";
import { purgeAddresses } from "../lib/datapath/address_purge.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import { markFor, type ProbeKey } from "../lib/probe/key.ts";
import {
  agentTestOptions,
  AgentWorld,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "./helpers/agent_process.ts";
import { privilegedTests, testPinPath } from "./helpers/sim_world.ts";
import { plugin } from "./helpers/tenant_world.ts";
import { waitFor } from "./helpers/wait.ts";

const privileged = privilegedTests();

/** A datapath on a pin path of its own (no cgroup), closed and uninstalled on dispose. */
function pinnedDatapath() {
  const pinPath = testPinPath();
  const datapath = Datapath.open({ pinPath });
  return {
    pinPath,
    datapath,
    put: (key: ProbeKey, networkId: number) =>
      datapath.store.put({ key, value: { networkId, mark: markFor(defaultConfig(), networkId) } }),
    [Symbol.dispose]() {
      datapath.close();
      uninstall(pinPath);
    },
  };
}

const v4 = (address: string, port: number): ProbeKey => ({ family: "ipv4", address, port });
const v6 = (address: string, port: number): ProbeKey => ({ family: "ipv6", address, port });

privileged(
  "the plugin's purge removes every entry at the attached addresses from the pinned probe map, whatever their port and network, and no other",
  () => {
    using d = pinnedDatapath();
    d.put(v4("10.70.0.5", 8080), 1);
    d.put(v4("10.70.0.5", 9000), 2);
    d.put(v6("fd70::5", 9000), 1);
    d.put(v4("10.70.0.6", 8080), 1);
    d.put(v6("fd70::6", 8080), 2);
    const report = purgeAddresses(d.pinPath, ["10.70.0.5", "fd70:0::5"]);
    assert.deepEqual(report.problems, []);
    assert.equal(report.maps.length, 1);
    assert.equal(report.maps[0].path, `${d.datapath.layoutDir}/probe_targets`);
    assert.deepEqual(report.maps[0].removed.sort(), [
      "10.70.0.5:8080",
      "10.70.0.5:9000",
      "[fd70::5]:9000",
    ]);
    assert.deepEqual(
      d.datapath.store.entries().map((e) => `${e.key.address}:${e.key.port}`).sort(),
      ["10.70.0.6:8080", "fd70::6:8080"],
    );
  },
);

privileged("the plugin's purge leaves a probe map pinned by another user alone and says so", () => {
  using d = pinnedDatapath();
  d.put(v4("10.70.0.5", 8080), 1);
  const pin = `${d.datapath.layoutDir}/probe_targets`;
  Deno.chownSync(pin, 65534, 65534);
  try {
    const report = purgeAddresses(d.pinPath, ["10.70.0.5"]);
    assert.deepEqual(report.maps, []);
    assert.deepEqual(report.problems, [`pin "${pin}" is owned by uid 65534, not root`]);
    assert.equal(d.datapath.store.entries().length, 1);
  } finally {
    Deno.chownSync(pin, 0, 0);
  }
});

/** Waits until the kubelet's probe of `host`:`port` lands as `want` says. */
async function probeLands(
  w: AgentWorld,
  host: string,
  port: number,
  http: boolean,
  want: (r: Awaited<ReturnType<AgentWorld["probe"]>>) => boolean,
  what: string,
) {
  let last: unknown;
  await waitFor(async () => want(last = await w.probe(host, port, http ? "/" : undefined)), {
    timeout: 10_000,
    message: `${what} (last: ${JSON.stringify(last)})`,
  });
}

Deno.test({
  name:
    "an address attached to a pod of another network while the agent is down is never probed into the old pod's network: the plugin removes the old entries and the agent's first reconcile writes the new pod's",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    w.addressSharing = "default";
    const socket = `${w.podsDir}/run/cni.sock`;
    const args = ["--no-kube-api", `--pods-dir=${w.podsDir}`, `--cni-socket=${socket}`];
    // Red, in network 1, at the shared addresses: the kubelet's probes of it are tagged red.
    await w.writePod(podManifest({ name: "red", networkId: 1, httpPort: 8080, tcpPort: 9000 }));
    const agent = w.startAgent(args);
    await agent.ready(60_000);
    await probeLands(w, POD_IPV4, 8080, true, (r) => r.body === w.podIn(1), "red's probe tagged");
    // The agent stops; red is deleted meanwhile; the node attaches its addresses to green, of
    // network 2, whose probes use other ports.
    await agent.stop();
    await w.removePod("red");
    const add = await plugin(
      "ADD",
      socket,
      { name: "green", uid: "uid-green" },
      { network: "net2", networkId: 2 },
      [POD_IPV4, POD_IPV6],
      "eth0",
      { pinPath: w.pinPath },
    );
    assert.equal(add.code, 0, add.stdout + add.stderr);
    assert.match(add.stderr, /ADD e2e\/green: the agent at .* did not answer/);
    // The kubelet's probes of red's ports reach no pod: tagged for no network, not red's.
    for (const [host, port, http] of [[POD_IPV4, 8080, true], [POD_IPV6, 9000, false]] as const) {
      const res = await w.probe(host, port, http ? "/" : undefined);
      assert.equal(res.result, "NO_ROUTE", `${host}:${port}: ${JSON.stringify(res)}`);
      assert.ok(!res.mark, `${host}:${port} tagged with mark ${res.mark}`);
    }
    // It says what it removed, from which pin.
    assert.match(
      add.stderr,
      new RegExp(
        `removed the probe targets .*${
          POD_IPV4.replaceAll(".", "\\.")
        }:8080.* from ${w.pinPath}/abi\\d+/probe_targets`,
      ),
    );
    // The agent is back with green in its pod list: green's probes are tagged green, red's none.
    await w.writePod(podManifest({ name: "green", networkId: 2, httpPort: 8081, tcpPort: 9001 }));
    const back = w.startAgent(args);
    await back.ready(60_000);
    await probeLands(w, POD_IPV4, 8081, true, (r) => r.body === w.podIn(2), "green's probe tagged");
    await probeLands(
      w,
      POD_IPV6,
      9001,
      false,
      (r) => r.body === w.podIn(2),
      "green's probe tagged",
    );
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).result, "NO_ROUTE");
  },
});
