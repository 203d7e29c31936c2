import assert from "node:assert/strict";
import { PodInterfaces } from "./pod_interfaces.ts";

const eth0 = { containerId: "c1", ifname: "eth0" };
const net1 = { containerId: "c1", ifname: "net1" };

Deno.test("PodInterfaces: a pod's addresses are those of all its interfaces", () => {
  const p = new PodInterfaces();
  assert.deepEqual(p.add("u", eth0, ["10.0.0.1"]), ["10.0.0.1"]);
  assert.deepEqual(p.add("u", net1, ["10.1.0.1", "10.0.0.1"]), ["10.0.0.1", "10.1.0.1"]);
  assert.deepEqual(p.addresses("u"), ["10.0.0.1", "10.1.0.1"]);
});

Deno.test("PodInterfaces: removing one interface keeps the others' addresses", () => {
  const p = new PodInterfaces();
  p.add("u", eth0, ["10.0.0.1"]);
  p.add("u", net1, ["10.1.0.1"]);
  assert.deepEqual(p.remove("u", net1), ["10.0.0.1"]);
  assert.deepEqual(p.remove("u", eth0), undefined, "the last interface forgets the pod");
  assert.deepEqual(p.addresses("u"), []);
});

Deno.test("PodInterfaces: a new sandbox's ADD replaces the older sandbox's interfaces", () => {
  const p = new PodInterfaces();
  p.add("u", eth0, ["10.0.0.1"]);
  p.add("u", net1, ["10.1.0.1"]);
  assert.deepEqual(p.add("u", { containerId: "c2", ifname: "eth0" }, ["10.0.0.9"]), ["10.0.0.9"]);
});

Deno.test("PodInterfaces: without a ref the pod's view is replaced or forgotten whole", () => {
  const p = new PodInterfaces();
  p.add("u", eth0, ["10.0.0.1"]);
  p.add("u", net1, ["10.1.0.1"]);
  assert.deepEqual(p.add("u", undefined, ["10.2.0.1"]), ["10.2.0.1"]);
  p.add("u", eth0, ["10.0.0.1"]);
  assert.equal(p.remove("u", undefined), undefined);
  assert.deepEqual(p.addresses("u"), []);
});

Deno.test("PodInterfaces: keepOnly() forgets pods no source knows", () => {
  const p = new PodInterfaces();
  p.add("u", eth0, ["10.0.0.1"]);
  p.add("v", eth0, ["10.0.0.2"]);
  p.keepOnly(new Set(["v"]));
  assert.deepEqual(p.addresses("u"), []);
  assert.deepEqual(p.addresses("v"), ["10.0.0.2"]);
});

Deno.test("PodInterfaces: addresses() hands out one array until the pod's interfaces change", () => {
  const p = new PodInterfaces();
  p.add("u", eth0, ["10.0.0.1"]);
  const first = p.addresses("u");
  assert.equal(p.addresses("u"), first);
  p.add("u", net1, ["10.1.0.1"]);
  assert.notEqual(p.addresses("u"), first);
  assert.deepEqual(p.addresses("u"), ["10.0.0.1", "10.1.0.1"]);
  assert.deepEqual(p.remove("u", net1), ["10.0.0.1"]);
  assert.deepEqual(p.addresses("u"), ["10.0.0.1"]);
  p.keepOnly(new Set());
  assert.deepEqual(p.addresses("u"), []);
});
