import assert from "node:assert/strict";
import { BRIDGE_CONF, CALICO, deeplyNested, FLANNEL, MULTUS } from "./_fixtures.ts";
import { isLibcniConfName, libcniLoad, type PluginFile } from "./libcni.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const none = () => null;
const load = (
  name: string,
  text: string | Uint8Array,
  dir: (n: string) => PluginFile[] | null = none,
) => libcniLoad(name, typeof text === "string" ? enc(text) : text, dir);

Deno.test("isLibcniConfName lists what ConfFiles lists: the extension after the last dot", () => {
  const listed = ["10-a.conf", "10-a.conflist", "a.json", ".conf", "x.y.conflist"];
  const not = ["10-a.conf.bak", "a.yaml", "conf", ".10-a.conflist.lace-1.tmp", "a.CONF"];
  assert.deepStrictEqual(listed.filter(isLibcniConfName), listed);
  assert.deepStrictEqual(not.filter(isLibcniConfName), []);
});

Deno.test("libcniLoad loads the real plugins' files", () => {
  for (
    const [name, text] of [
      ["10-flannel.conflist", FLANNEL],
      ["10-calico.conflist", CALICO],
      ["00-multus.conf", MULTUS],
      ["10-bridge.conf", BRIDGE_CONF],
    ]
  ) {
    assert.deepStrictEqual(load(name, text), { ok: true, pluginDirPlugins: 0 }, name);
  }
});

Deno.test("libcniLoad takes what Lace does not chain: no cniVersion, an empty name, 9,000 levels", () => {
  assert.equal(load("a.conflist", `{"name":"","plugins":[{"type":"x"}]}`).ok, true);
  assert.equal(load("a.conf", `{"type":"x"}`).ok, true);
  assert.equal(load("a.conflist", deeplyNested()).ok, true);
  // Go replaces invalid UTF-8 in a string; JSON.parse of a fatal decoder would not get that far.
  const bad = enc(`{"name":"n","cniVersion":"1.0.0","plugins":[{"type":"x","k":"\u00e9"}]}`);
  const latin1 = Uint8Array.from([...bad].filter((_, i) => i !== bad.indexOf(0xc3)));
  assert.equal(load("a.conflist", latin1).ok, true);
});

const BROKEN: [string, string, string, RegExp][] = [
  ["an empty file", "a.conflist", "", /not JSON/],
  ["a cut-off file", "a.conflist", FLANNEL.slice(0, 60), /not JSON/],
  ["a byte order mark", "a.conflist", "\uFEFF" + FLANNEL, /not JSON/],
  ["nesting past Go's limit", "a.conflist", deeplyNested(10_001), /max depth/],
  ["a number past float64", "a.conflist", FLANNEL.replace("true", "1e400"), /float64/],
  ["no name", "a.conflist", `{"plugins":[{"type":"x"}]}`, /no name/],
  ["a name that is no string", "a.conflist", `{"name":1,"plugins":[{"type":"x"}]}`, /name type/],
  [
    "a cniVersion that is no string",
    "a.conflist",
    `{"name":"n","cniVersion":1,"plugins":[{"type":"x"}]}`,
    /cniVersion type/,
  ],
  [
    "a bad cniVersions entry",
    "a.conflist",
    `{"name":"n","cniVersions":["1.x"],"plugins":[{"type":"x"}]}`,
    /invalid version/,
  ],
  [
    "a bad disableCheck",
    "a.conflist",
    `{"name":"n","disableCheck":"maybe","plugins":[{"type":"x"}]}`,
    /disableCheck/,
  ],
  [
    "plugins that are no list",
    "a.conflist",
    `{"name":"n","plugins":{"type":"x"}}`,
    /'plugins' type/,
  ],
  ["no plugins", "a.conflist", `{"name":"n","plugins":[]}`, /no plugins in list/],
  [
    "a plugin without type",
    "a.conflist",
    `{"name":"n","plugins":[{"type":"x"},{"name":"y"}]}`,
    /plugin config 1: missing 'type'/,
  ],
  [
    "a plugin that is no object",
    "a.conflist",
    `{"name":"n","plugins":["x"]}`,
    /cannot unmarshal string/,
  ],
  [
    "capabilities that are not booleans",
    "a.conflist",
    `{"name":"n","plugins":[{"type":"x","capabilities":{"a":1}}]}`,
    /"capabilities"/,
  ],
  [
    "an ipam type that is no string",
    "a.conflist",
    `{"name":"n","plugins":[{"type":"x","ipam":{"type":7}}]}`,
    /"ipam"/,
  ],
  ["a type field in another case that is no string", "a.conf", `{"name":"n","TYPE":7}`, /"type"/],
  [
    "a list in a .conf",
    "a.conf",
    `{"name":"n","cniVersion":"1.0.0","plugins":[{"type":"x"}]}`,
    /missing 'type'/,
  ],
  [
    "no plugins and loadOnlyInlinedPlugins",
    "a.conflist",
    `{"name":"n","loadOnlyInlinedPlugins":true}`,
    /loadOnlyInlinedPlugins/,
  ],
  ["no plugins anywhere", "a.conflist", `{"name":"n"}`, /no plugin configs found/],
];

for (const [what, name, text, error] of BROKEN) {
  Deno.test(`libcniLoad fails on ${what}, as containerd and CRI-O do`, () => {
    const r = load(name, text);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, error);
  });
}

Deno.test("libcniLoad reads a list's plugin directory after its own plugins, unless only inlined", () => {
  const dir = (n: string) =>
    n === "net" ? [{ name: "10-extra.conf", bytes: enc(`{"type":"tuning"}`) }] : null;
  const list = `{"name":"net","cniVersion":"1.0.0","plugins":[{"type":"bridge"}]}`;
  assert.deepStrictEqual(load("a.conflist", list, dir), { ok: true, pluginDirPlugins: 1 });
  assert.deepStrictEqual(load("a.conflist", `{"name":"net"}`, dir), {
    ok: true,
    pluginDirPlugins: 1,
  });
  const inlined = `{"name":"net","loadOnlyInlinedPlugins":"TRUE","plugins":[{"type":"bridge"}]}`;
  assert.deepStrictEqual(load("a.conflist", inlined, dir), { ok: true, pluginDirPlugins: 0 });
  const broken = () => [{ name: "10-extra.conf", bytes: enc(`{"name":"x"}`) }];
  const r = load("a.conflist", list, broken);
  assert.equal(r.ok, false);
  if (!r.ok) assert.match(r.error, /plugin file "10-extra\.conf" of network "net": missing 'type'/);
});
