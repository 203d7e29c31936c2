import assert from "node:assert/strict";
import type { ProbeEntry } from "../probe/key.ts";
import { MemoryProbeStore } from "../../tests/helpers/memory_probe_store.ts";
import { checkAttachment, cniHandlerFor, type DesiredTarget } from "./check.ts";

const attachment = { namespace: "ns", name: "web", uid: "u1", ips: ["10.70.0.5"] };

function target(address: string, port: number, uid = "u1", network = "blue"): DesiredTarget {
  return {
    entry: { key: { family: "ipv4", address, port }, value: { networkId: 7, mark: 0x71000 } },
    network,
    pod: { uid },
  };
}

Deno.test("checkAttachment() finds nothing wrong when every target is in the map", () => {
  const desired = [target("10.70.0.5", 8080), target("10.70.0.5", 9000)];
  assert.deepEqual(checkAttachment(attachment, desired, desired.map((t) => t.entry)), []);
});

Deno.test("checkAttachment() reports a target missing from the map", () => {
  assert.deepEqual(checkAttachment(attachment, [target("10.70.0.5", 8080)], []), [
    "target 10.70.0.5:8080 is not in the probe map",
  ]);
});

Deno.test("checkAttachment() reports a map entry with another value", () => {
  const t = target("10.70.0.5", 8080);
  const wrong: ProbeEntry = { key: t.entry.key, value: { networkId: 9, mark: 0x91000 } };
  const [problem] = checkAttachment(attachment, [t], [wrong]);
  assert.match(problem, /network id 9 mark 0x91000 in the probe map, expected network id 7/);
});

Deno.test("checkAttachment() reports targets on addresses the attachment lacks", () => {
  const t = target("10.70.0.9", 8080);
  assert.deepEqual(checkAttachment(attachment, [t], [t.entry]), [
    "target 10.70.0.9:8080 is on an address the attachment does not have",
  ]);
});

Deno.test("checkAttachment() reports a network other than the plugin's", () => {
  const t = target("10.70.0.5", 8080, "u1", "red");
  const [problem] = checkAttachment({ ...attachment, network: "blue", networkId: 7 }, [t], [
    t.entry,
  ]);
  assert.match(problem, /in network "red", the plugin says "blue"/);
});

Deno.test("checkAttachment() reports a network id other than the plugin's under the same name", () => {
  const t = target("10.70.0.5", 8080); // blue, id 7
  const problems = checkAttachment({ ...attachment, network: "blue", networkId: 2 }, [t], [
    t.entry,
  ]);
  assert.deepEqual(problems, ["target 10.70.0.5:8080 is in network id 7, the plugin says 2"]);
});

Deno.test("checkAttachment() ignores other pods' targets", () => {
  assert.deepEqual(checkAttachment(attachment, [target("10.70.0.8", 80, "u2")], []), []);
});

Deno.test("checkAttachment() accepts targets on the addresses of the pod's other interfaces", () => {
  const other = target("192.168.5.8", 8080);
  const entries = [other.entry];
  assert.equal(checkAttachment(attachment, [other], entries).length, 1);
  assert.deepEqual(checkAttachment(attachment, [other], entries, ["192.168.5.8"]), []);
});

Deno.test("cniHandlerFor() checks against the store itself", async () => {
  const store = new MemoryProbeStore();
  const t = target("10.70.0.5", 8080);
  const core = {
    registerAttachment: () => Promise.resolve(),
    removeAttachment: () => Promise.resolve(),
    interfaceAddresses: () => [],
    view: () => ({ targets: [{ ...t, pod: { ...t.pod, namespace: "ns", name: "web" } }] }),
  };
  const handler = cniHandlerFor(core, store);
  assert.equal(
    (await handler.check!(attachment, { containerId: "c1", ifname: "eth0" })).problems.length,
    1,
  );
  store.put(t.entry);
  assert.deepEqual(
    (await handler.check!(attachment, { containerId: "c1", ifname: "eth0" })).problems,
    [],
  );
});
