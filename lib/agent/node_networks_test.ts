import assert from "node:assert/strict";
import { fileNodeNetworkStore, parseNodeNetworks } from "./node_networks.ts";

Deno.test("parseNodeNetworks() keeps well-formed entries and names the others", () => {
  const { networks, problems } = parseNodeNetworks(JSON.stringify({
    u1: { network: "blue", networkId: 7 },
    u2: { network: "red", networkId: 0 },
    u3: { network: "", networkId: 3 },
    u4: "green",
  }));
  assert.deepEqual([...networks], [["u1", { network: "blue", networkId: 7 }]]);
  assert.equal(problems.length, 3);
  assert.match(problems[0], /"u2"/);
});

Deno.test("parseNodeNetworks() reads broken text as empty, with the reason", () => {
  assert.deepEqual(parseNodeNetworks("{").networks.size, 0);
  assert.match(parseNodeNetworks("[]").problems[0], /not a JSON object/);
});

Deno.test("fileNodeNetworkStore() saves root-only and loads what it saved", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-node-networks-" });
  try {
    const store = fileNodeNetworkStore(`${dir}/run/node-networks.json`);
    assert.deepEqual(store.load(), new Map(), "a missing file is an empty store");
    const networks = new Map([["u1", { network: "blue", networkId: 7 }]]);
    store.save(networks);
    assert.deepEqual(store.load(), networks);
    assert.equal(Deno.statSync(`${dir}/run/node-networks.json`).mode! & 0o777, 0o600);
    assert.equal(Deno.statSync(`${dir}/run`).mode! & 0o777, 0o700);
    assert.deepEqual([...Deno.readDirSync(`${dir}/run`)].map((e) => e.name), [
      "node-networks.json",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test(
  "finding 8: fileNodeNetworkStore() reads nothing from a directory others may write",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "lace-node-networks-" });
    try {
      const store = fileNodeNetworkStore(`${dir}/run/node-networks.json`);
      store.save(new Map([["u1", { network: "blue", networkId: 7 }]]));
      // Anyone may now have replaced the file: its networks are not taken.
      Deno.chmodSync(`${dir}/run`, 0o777);
      assert.deepEqual(store.load(), new Map());
      Deno.chmodSync(`${dir}/run`, 0o700);
      assert.equal(store.load().size, 1);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
