import assert from "node:assert/strict";
import { globMatch, parseChainTargets, selectFiles } from "./select.ts";

Deno.test("selectFiles orders bytewise as Go does: upper case before lower case", () => {
  assert.deepStrictEqual(selectFiles(["a.conf", "B.conf", "notes.txt"], [{ pattern: "*" }]), [
    { name: "B.conf" },
    { name: "a.conf" },
  ]);
});

Deno.test("selectFiles with no targets selects nothing", () => {
  assert.deepStrictEqual(selectFiles(["10-a.conflist"], []), []);
});

Deno.test("selectFiles with targets chains every match, the first matching target giving the network", () => {
  assert.deepStrictEqual(
    selectFiles(
      ["10-flannel.conflist", "20-blue.conflist", "30-red.conf", "40-x.yaml"],
      parseChainTargets("20-*.conflist=blue:7, *.conf*"),
    ),
    [
      { name: "10-flannel.conflist" },
      { name: "20-blue.conflist", network: "blue", networkId: 7 },
      { name: "30-red.conf" },
    ],
  );
});

Deno.test("globMatch treats dots literally and ? as one character", () => {
  assert.deepStrictEqual(globMatch("1?-a.conf", "10-a.conf"), true);
  assert.deepStrictEqual(globMatch("10-a.conf", "10-aXconf"), false);
});

Deno.test("parseChainTargets names every bad item", () => {
  let e: Error = new Error("did not throw");
  try {
    parseChainTargets("a=b, x/y.conf, c=blue:0, d=blue:70000, ok.conf");
  } catch (err) {
    e = err as Error;
  }
  assert.ok(e instanceof TypeError);
  for (const bad of ['"a=b"', '"x/y.conf"', '"c=blue:0"', '"d=blue:70000"']) {
    assert.deepStrictEqual(e.message.includes(bad), true, `${bad} in ${e.message}`);
  }
});

Deno.test("parseChainTargets holds a file's network to the network name rule", () => {
  assert.deepStrictEqual(parseChainTargets("20-*.conflist=blå.net-2:7"), [
    { pattern: "20-*.conflist", network: "blå.net-2", networkId: 7 },
  ]);
  for (const network of ["blue\u200b", "blue\u00a0net", "x".repeat(254), ""]) {
    const item = `20-*.conflist=${network}:7`;
    assert.throws(
      () => parseChainTargets(item),
      (e: Error) =>
        e instanceof TypeError &&
        e.message.startsWith(
          `${
            JSON.stringify(item)
          }: the network name must be 1..253 printable characters without spaces: `,
        ) &&
        // The parser does not know the agent's annotation key: it names the flag that sets it.
        e.message.endsWith(
          "; give the name Lace's network plugin writes in its pods' network annotation (the agent's --network-annotation, lace.io/network by default)",
        ),
      JSON.stringify(network),
    );
  }
});
