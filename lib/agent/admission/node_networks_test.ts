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

Deno.test("parseNodeNetworks() leaves out an entry whose network name breaks the name rule, keeping the others", () => {
  const { networks, problems } = parseNodeNetworks(JSON.stringify({
    u1: { network: "blue", networkId: 7 },
    u2: { network: "blue\u200b", networkId: 7 },
    u3: { network: "x".repeat(254), networkId: 8 },
    u4: { network: "red", networkId: 9 },
  }));
  assert.deepEqual([...networks.keys()], ["u1", "u4"]);
  assert.equal(problems.length, 2);
  assert.match(
    problems[0],
    /^entry "u2": the network must be 1\.\.253 printable characters without spaces: .*; left out/,
  );
});

Deno.test("fileNodeNetworkStore() loads the good entries of a file with a bad name, without throwing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-node-networks-" });
  try {
    Deno.mkdirSync(`${dir}/run`, { mode: 0o700 });
    Deno.writeTextFileSync(
      `${dir}/run/node-networks.json`,
      JSON.stringify({
        u1: { network: "blue net", networkId: 7 },
        u2: { network: "red", networkId: 9 },
      }),
    );
    const store = fileNodeNetworkStore(`${dir}/run/node-networks.json`);
    assert.deepEqual(store.load(), new Map([["u2", { network: "red", networkId: 9 }]]));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
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
  "fileNodeNetworkStore() reads nothing from a directory others may write",
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
