import assert from "node:assert/strict";
import { BRIDGE_CONF, CALICO, CILIUM, deeplyNested, FLANNEL, MULTUS } from "./_fixtures.ts";
import {
  chainConfig,
  CHAINED_BY,
  type LaceEntry,
  MAX_CONFIG_DEPTH,
  parseConfig,
  sameWithoutLace,
  unchainConfig,
} from "./conflist.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const ENTRY: LaceEntry = { socket: "/run/lace/cni.sock" };

function written(name: string, text: string, entry = ENTRY) {
  const r = chainConfig(name, enc(text), entry);
  if (r.kind !== "write") throw new Error(`expected a write, got ${JSON.stringify(r)}`);
  return { name: r.name, json: JSON.parse(dec(r.bytes)), bytes: r.bytes };
}

const REAL_WORLD: [string, string, string, string[]][] = [
  ["flannel", "10-flannel.conflist", FLANNEL, ["flannel", "portmap"]],
  ["calico", "10-calico.conflist", CALICO, ["calico", "portmap", "bandwidth"]],
  ["cilium", "05-cilium.conflist", CILIUM, ["cilium-cni"]],
  ["multus (.conf)", "00-multus.conf", MULTUS, ["multus"]],
  ["bridge (.conf, CRLF)", "10-bridge.conf", BRIDGE_CONF, ["bridge"]],
];

for (const [what, name, text, types] of REAL_WORLD) {
  Deno.test(`chainConfig appends lace as the last plugin of a ${what} config`, () => {
    const w = written(name, text);
    assert.deepStrictEqual(w.json.plugins.map((p: { type: string }) => p.type), [...types, "lace"]);
    assert.deepStrictEqual(w.json.plugins.at(-1), {
      type: "lace",
      socket: "/run/lace/cni.sock",
      chainedBy: CHAINED_BY,
    });
    const original = JSON.parse(text);
    assert.deepStrictEqual(w.json.name, original.name);
    assert.deepStrictEqual(w.json.cniVersion, original.cniVersion);
  });

  Deno.test(`chainConfig is idempotent on a ${what} config: chaining twice changes nothing`, () => {
    const w = written(name, text);
    assert.deepStrictEqual(chainConfig(w.name, w.bytes, ENTRY), { kind: "chained-already" });
  });

  Deno.test(`unchainConfig of a chained ${what} config gives the same list without lace`, () => {
    const w = written(name, text);
    const u = unchainConfig(w.name, w.bytes);
    assert.deepStrictEqual(u.kind, "write");
    if (u.kind !== "write") return;
    assert.deepStrictEqual(
      sameWithoutLace({ name, bytes: enc(text) }, { name: w.name, bytes: u.bytes }),
      true,
    );
  });
}

Deno.test("chainConfig turns a single .conf into a .conflist with the plugin as its first entry, as libcni does", () => {
  const w = written("10-bridge.conf", BRIDGE_CONF);
  assert.deepStrictEqual(w.name, "10-bridge.conflist");
  assert.deepStrictEqual(w.json.name, "mynet");
  assert.deepStrictEqual(w.json.cniVersion, "1.0.0");
  assert.deepStrictEqual(w.json.plugins[0], JSON.parse(BRIDGE_CONF));
});

Deno.test("chainConfig turns a single .json into a .conflist of the same base name", () => {
  assert.deepStrictEqual(written("10-bridge.json", BRIDGE_CONF).name, "10-bridge.conflist");
});

Deno.test("chainConfig writes the configured network into the lace entry", () => {
  const w = written("10-flannel.conflist", FLANNEL, { ...ENTRY, network: "blue", networkId: 7 });
  assert.deepStrictEqual(w.json.plugins.at(-1).network, "blue");
  assert.deepStrictEqual(w.json.plugins.at(-1).networkId, 7);
});

Deno.test("chainConfig names shared address sharing in the lace entry, and nothing under the default", () => {
  const shared = written("10-flannel.conflist", FLANNEL, { ...ENTRY, addressSharing: "shared" });
  assert.equal(shared.json.plugins.at(-1).addressSharing, "shared");
  const plain = written("10-flannel.conflist", FLANNEL, ENTRY);
  assert.equal("addressSharing" in plain.json.plugins.at(-1), false);
});

Deno.test("chainConfig leaves a hand-chained lace as it is, wherever it sits", () => {
  const hand = JSON.parse(FLANNEL);
  hand.plugins.splice(1, 0, { type: "lace", socket: "/elsewhere.sock" });
  assert.deepStrictEqual(chainConfig("10-flannel.conflist", enc(JSON.stringify(hand)), ENTRY), {
    kind: "hand-chained",
  });
});

Deno.test("chainConfig replaces its own entry in place when the settings changed: never two lace entries", () => {
  const first = written("10-flannel.conflist", FLANNEL);
  const again = written(first.name, dec(first.bytes), { socket: "/run/other.sock" });
  const laces = again.json.plugins.filter((p: { type: string }) => p.type === "lace");
  assert.deepStrictEqual(laces.length, 1);
  assert.deepStrictEqual(laces[0].socket, "/run/other.sock");
});

Deno.test("chainConfig moves its own entry to the end when another plugin was appended after it", () => {
  const first = written("10-flannel.conflist", FLANNEL).json;
  first.plugins.push({ type: "tuning" });
  const again = written("10-flannel.conflist", JSON.stringify(first));
  assert.deepStrictEqual(again.json.plugins.map((p: { type: string }) => p.type), [
    "flannel",
    "portmap",
    "tuning",
    "lace",
  ]);
});

const BAD: [string, string, string, RegExp][] = [
  ["empty file", "10-x.conflist", "", /not valid JSON/],
  ["truncated JSON", "10-x.conflist", FLANNEL.slice(0, 40), /not valid JSON/],
  ["a JSON array", "10-x.conflist", "[]", /not a JSON object/],
  ["no cniVersion", "10-x.conflist", `{"name":"n","plugins":[{"type":"a"}]}`, /cniVersion/],
  ["no name", "10-x.conflist", `{"cniVersion":"1.0.0","plugins":[{"type":"a"}]}`, /"name"/],
  ["no plugins", "10-x.conflist", `{"cniVersion":"1.0.0","name":"n"}`, /"plugins"/],
  ["empty plugins", "10-x.conflist", `{"cniVersion":"1.0.0","name":"n","plugins":[]}`, /"plugins"/],
  [
    "a plugin without type",
    "10-x.conflist",
    `{"cniVersion":"1.0.0","name":"n","plugins":[{"x":1}]}`,
    /plugins\[0\] has no plugin "type"/,
  ],
  ["a .conf without type", "10-x.conf", `{"cniVersion":"1.0.0","name":"n"}`, /"type"/],
  [
    "a list in a .conf",
    "10-x.conf",
    `{"cniVersion":"1.0.0","name":"n","type":"x","plugins":[]}`,
    /not named .conflist/,
  ],
  ["not UTF-8", "10-x.conflist", "\uFFFD", /not valid JSON|not a JSON/],
  ["a name the runtime skips", "10-x.yaml", FLANNEL, /not a CNI configuration file/],
  ["over a MiB", "10-x.conflist", " ".repeat(1024 * 1024 + 1), /larger than/],
];

for (const [what, name, text, error] of BAD) {
  Deno.test(`chainConfig never rewrites ${what}: it reports why`, () => {
    const r = chainConfig(
      name,
      what === "not UTF-8" ? new Uint8Array([0xff, 0xfe]) : enc(text),
      ENTRY,
    );
    assert.deepStrictEqual(r.kind, "unparsable");
    if (r.kind === "unparsable") assert.match(r.error, error);
    assert.deepStrictEqual(unchainConfig(name, enc(text)).kind, "unparsable");
  });
}

Deno.test("chainConfig refuses a cniVersion the plugin does not support: chained, every ADD would fail", () => {
  const old = FLANNEL.replace('"0.3.1"', '"0.2.0"');
  const r = chainConfig("10-flannel.conflist", enc(old), ENTRY);
  assert.deepStrictEqual(r.kind, "refused");
  if (r.kind === "refused") assert.match(r.error, /0\.2\.0/);
});

Deno.test("chainConfig refuses a list nested 9,000 levels deep inside a plugin field, without throwing", () => {
  const r = chainConfig("10-flannel.conflist", enc(deeplyNested()), ENTRY);
  assert.deepStrictEqual(r.kind, "refused");
  if (r.kind === "refused") {
    assert.match(r.error, /"10-flannel\.conflist" nests more than 64 levels deep/);
  }
  assert.deepStrictEqual(
    unchainConfig("10-flannel.conflist", enc(deeplyNested())).kind,
    "unparsable",
  );
  assert.deepStrictEqual(
    sameWithoutLace(
      { name: "a.conflist", bytes: enc(deeplyNested()) },
      { name: "a.conflist", bytes: enc(deeplyNested()) },
    ),
    false,
  );
});

Deno.test("chainConfig still chains a list nested exactly as deep as it takes", () => {
  // The list, plugins, the plugin, delegate and options: four levels above the brackets.
  const r = chainConfig("10-flannel.conflist", enc(deeplyNested(MAX_CONFIG_DEPTH - 4)), ENTRY);
  assert.deepStrictEqual(r.kind, "write");
  const over = chainConfig("10-flannel.conflist", enc(deeplyNested(MAX_CONFIG_DEPTH - 3)), ENTRY);
  assert.deepStrictEqual(over.kind, "refused");
});

Deno.test("unchainConfig leaves a hand-chained lace and reports nothing to take out", () => {
  const hand = JSON.parse(FLANNEL);
  hand.plugins.push({ type: "lace", socket: "/run/lace/cni.sock" });
  assert.deepStrictEqual(unchainConfig("10-flannel.conflist", enc(JSON.stringify(hand))), {
    kind: "not-chained",
  });
});

Deno.test("parseConfig reads a .conf as the one plugin of a list named after its network", () => {
  const p = parseConfig("10-bridge.conf", enc(BRIDGE_CONF));
  assert.deepStrictEqual(p.single, true);
  assert.deepStrictEqual(p.list.name, "mynet");
  assert.deepStrictEqual(p.list.plugins.length, 1);
});
