import assert from "node:assert/strict";
import { Attachments } from "./attachments.ts";

Deno.test("Attachments ignores a late DEL of a pod's replaced sandbox", () => {
  const table = new Attachments();
  table.add({ containerId: "old", ifname: "eth0" }, "u1");
  table.add({ containerId: "new", ifname: "eth0" }, "u1");
  assert.equal(table.uidToRemove({ containerId: "old", ifname: "eth0" }, "u1"), null);
  table.delete({ containerId: "old", ifname: "eth0" });
  assert.equal(table.uidToRemove({ containerId: "new", ifname: "eth0" }, "u1"), "u1");
  assert.equal(table.uidToRemove({ containerId: "x", ifname: "eth0" }, "u2"), "u2");
  assert.equal(table.uidToRemove({ containerId: "x", ifname: "eth0" }, undefined), null);
});

Deno.test("Attachments.collect() returns the pods of attachments the runtime no longer has", () => {
  const table = new Attachments();
  table.add({ containerId: "a", ifname: "eth0" }, "u1");
  table.add({ containerId: "b", ifname: "eth0" }, "u2");
  table.add({ containerId: "old", ifname: "eth0" }, "u3");
  table.add({ containerId: "c", ifname: "eth0" }, "u3");
  const gone = table.collect([{ containerId: "a", ifname: "eth0" }, {
    containerId: "c",
    ifname: "eth0",
  }]);
  assert.deepEqual(gone, [{ uid: "u2", ref: { containerId: "b", ifname: "eth0" } }]);
  assert.equal(table.size, 2);
});

Deno.test("Attachments: a DEL of one interface of a pod's sandbox removes that interface only", () => {
  const table = new Attachments();
  const eth0 = { containerId: "s1", ifname: "eth0" };
  const net1 = { containerId: "s1", ifname: "net1" };
  table.add(eth0, "u1");
  table.add(net1, "u1");
  assert.equal(table.uidToRemove(net1, "u1"), "u1");
  table.delete(net1);
  assert.equal(table.size, 1);
  assert.equal(table.uidToRemove(eth0, undefined), "u1", "eth0 still registered");
  assert.deepEqual(table.collect([]), [{ uid: "u1", ref: eth0 }]);
});
