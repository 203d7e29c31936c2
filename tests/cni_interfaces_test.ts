/**
 * A pod with two interfaces, as Multus attaches them: the runtime runs two
 * network configurations for one sandbox (eth0, net1), each chaining the real
 * `ptp` reference plugin and `lace`, inside a simulated node's namespace. A
 * DEL of one interface takes only its addresses' targets out of the probe map;
 * the other interface keeps its targets and the kubelet still reaches it.
 */
import assert from "node:assert/strict";
import { type ChainOutcome, CniChain, PTP_MISSING } from "./helpers/cni_runtime.ts";
import { CniWorld, HTTP_PORT } from "./helpers/cni_world.ts";
import { privilegedTests } from "./helpers/sim_world.ts";

function addedIp(add: ChainOutcome): string {
  return (add.result!.ips as { address: string }[])[0].address.split("/")[0];
}

privilegedTests(PTP_MISSING)(
  "A DEL of one of a pod's two interfaces keeps the other's targets",
  async () => {
    await using w = await CniWorld.create({ agent: true });
    // The second attachment's network configuration: the same chain on another subnet.
    const second = `10.71.${w.subnet.split(".")[2]}`;
    const net1Chain = new CniChain({
      ...w.chain.opts,
      name: "lace-blue-net1",
      plugins: w.chain.opts.plugins.map((p) =>
        p.conf.type === "ptp"
          ? {
            ...p,
            conf: {
              ...p.conf,
              ipam: {
                ...(p.conf.ipam as Record<string, unknown>),
                ranges: [[{ subnet: `${second}.0/24` }]],
                dataDir: `${w.dir}/ipam-net1`,
              },
            },
          }
          : p
      ),
    });
    const pod = await w.makePod("multi");
    const eth0 = await w.chain.add(pod.params);
    assert.ok(eth0.ok, JSON.stringify(eth0.error));
    const net1Params = { ...pod.params, ifname: "net1" };
    const net1 = await net1Chain.add(net1Params);
    assert.ok(net1.ok, JSON.stringify(net1.error));
    const [ip0, ip1] = [addedIp(eth0), addedIp(net1)];
    const targetsOn = (ip: string) =>
      w.datapath.store.entries().filter((e) => e.key.address === ip).length;
    assert.equal(targetsOn(ip0), 2, "eth0's targets");
    assert.equal(targetsOn(ip1), 2, "net1's targets");

    const del = await net1Chain.del(net1Params);
    assert.ok(del.ok, JSON.stringify(del.error));
    assert.equal(targetsOn(ip1), 0, "net1's targets go with its DEL");
    assert.equal(targetsOn(ip0), 2, "eth0 keeps its targets");
    pod.ip = ip0;
    await w.startPodServer(pod);
    const probe = await w.kubelet.probe({
      host: ip0,
      port: HTTP_PORT,
      timeoutMs: 2000,
      http: "/ready",
    });
    assert.equal(probe.result, "reached", "the kubelet still reaches the pod on eth0");
    const check = await w.chain.check(pod.params);
    assert.ok(check.ok, `CHECK of eth0 after net1's DEL: ${JSON.stringify(check.error)}`);

    const last = await w.chain.del(pod.params);
    assert.ok(last.ok, JSON.stringify(last.error));
    assert.equal(targetsOn(ip0), 0, "the last interface's DEL takes the rest");
  },
);
