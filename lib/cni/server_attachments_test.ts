/**
 * DEL through the CNI server: which pod and which interface a DEL removes (the table behind it
 * is attachments.ts).
 */
import assert from "node:assert/strict";
import { attachment, cniServer, exchange, FakeAgent, ref, request } from "./_server_fixture.ts";

Deno.test("DEL removes the pod by uid, or by the sandbox that added it", async () => {
  const agent = new FakeAgent();
  await using cni = await cniServer(agent);
  await exchange(cni.path, request({ op: "add", ref, attachment }));
  await exchange(cni.path, request({ op: "del", ref }));
  await exchange(cni.path, request({ op: "del", ref }));
  await exchange(
    cni.path,
    request({ op: "del", ref: { containerId: "c9", ifname: "eth0" }, uid: "u9" }),
  );
  assert.deepEqual(agent.removed, ["u1", "u9"]);
});

Deno.test("DEL of a pod's second interface tells the agent which interface goes", async () => {
  const agent = new FakeAgent();
  await using cni = await cniServer(agent);
  const net1 = { containerId: ref.containerId, ifname: "net1" };
  await exchange(cni.path, request({ op: "add", ref, attachment }));
  await exchange(cni.path, request({ op: "add", ref: net1, attachment }));
  await exchange(cni.path, request({ op: "del", ref: net1 }));
  assert.deepEqual(agent.removed, ["u1"]);
  assert.deepEqual(agent.removedRefs, [net1]);
});
