/**
 * Which pins the plugin's purge trusts, on plain directories (no bpffs, no root: `owner` stands
 * for root's uid), and what it asks the kernel step; tests/downtime_purge_test.ts purges a real map.
 */
import assert from "node:assert/strict";
import { probeMapPins, purgeAddresses, type PurgeMap } from "./address_purge.ts";

const me = Deno.uid() ?? 0;

/** A pin path as the agent leaves it: 0700, a layout directory with its probe map, the flat one. */
function pinTree() {
  const root = Deno.makeTempDirSync({ prefix: "lace-purge-" });
  Deno.chmodSync(root, 0o755); // the temp dir's parent is /tmp, sticky: a safe parent
  const pins = `${root}/lace`;
  Deno.mkdirSync(`${pins}/abi2`, { recursive: true, mode: 0o700 });
  Deno.chmodSync(pins, 0o700);
  Deno.writeTextFileSync(`${pins}/abi2/probe_targets`, "");
  Deno.writeTextFileSync(`${pins}/probe_targets`, "");
  return { pins, [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }) };
}

Deno.test("probeMapPins() finds every layout's probe map under a pin path root's alone", () => {
  using t = pinTree();
  Deno.mkdirSync(`${t.pins}/abi3`, { mode: 0o700 }); // a layout without its map yet: none
  Deno.mkdirSync(`${t.pins}/agent_1700000000000`, { mode: 0o700 });
  assert.deepEqual(probeMapPins(t.pins, me), {
    pins: [`${t.pins}/probe_targets`, `${t.pins}/abi2/probe_targets`],
    problems: [],
  });
});

Deno.test("probeMapPins() trusts nothing under a pin path someone other than root owns or may write", () => {
  using t = pinTree();
  const other = probeMapPins(t.pins, me + 1);
  assert.deepEqual(other.pins, []);
  assert.match(other.problems.join("\n"), /pin path ".*\/lace" is owned by uid \d+, not root/);
  Deno.chmodSync(t.pins, 0o777);
  const open = probeMapPins(t.pins, me);
  assert.deepEqual(open.pins, []);
  assert.match(open.problems.join("\n"), /is writable by group or others \(mode 0777\)/);
});

Deno.test("probeMapPins() leaves out a layout directory others may write and a pin that is a link or not root's", () => {
  using t = pinTree();
  Deno.chmodSync(`${t.pins}/abi2`, 0o777);
  Deno.removeSync(`${t.pins}/probe_targets`);
  Deno.symlinkSync("/elsewhere/probe_targets", `${t.pins}/probe_targets`);
  const got = probeMapPins(t.pins, me);
  assert.deepEqual(got.pins, []);
  assert.match(got.problems[0], /layout directory ".*\/abi2" is writable by group or others/);
  assert.match(got.problems[1], /pin ".*\/lace\/probe_targets" is a symbolic link/);
  if (me === 0) {
    Deno.chmodSync(`${t.pins}/abi2`, 0o700);
    Deno.chownSync(`${t.pins}/abi2/probe_targets`, 65534, 65534);
    assert.match(
      probeMapPins(t.pins, me).problems.join("\n"),
      /pin ".*\/abi2\/probe_targets" is owned by uid 65534, not root/,
    );
  }
});

Deno.test("probeMapPins() says so where there is no pin path or no probe map under it", () => {
  using t = pinTree();
  assert.deepEqual(probeMapPins(`${t.pins}/missing`, me), {
    pins: [],
    problems: [`no pin path "${t.pins}/missing": the agent has not run on this node`],
  });
  Deno.removeSync(`${t.pins}/probe_targets`);
  Deno.removeSync(`${t.pins}/abi2/probe_targets`);
  assert.deepEqual(probeMapPins(t.pins, me).problems, [
    `no probe map pinned under "${t.pins}"`,
  ]);
});

Deno.test("purgeAddresses() asks each trusted pin for the addresses in canonical form and reports each failure", () => {
  using t = pinTree();
  const asked: [string, string[]][] = [];
  const purge: PurgeMap = (path, addresses) => {
    asked.push([path, [...addresses]]);
    if (path.includes("abi2")) throw new Error(`bpf_obj_get on the pin "${path}" failed: EPERM`);
    return [{ family: "ipv6", address: "fd70::5", port: 9000 }];
  };
  const got = purgeAddresses(t.pins, ["10.70.0.5", "FD70:0::5", "::ffff:10.70.0.6", "x"], {
    owner: me,
    purge,
  });
  const canonical = ["10.70.0.5", "fd70::5", "10.70.0.6"];
  assert.deepEqual(asked, [
    [`${t.pins}/probe_targets`, canonical],
    [`${t.pins}/abi2/probe_targets`, canonical],
  ]);
  assert.deepEqual(got, {
    maps: [{ path: `${t.pins}/probe_targets`, removed: ["[fd70::5]:9000"] }],
    problems: [`bpf_obj_get on the pin "${t.pins}/abi2/probe_targets" failed: EPERM`],
  });
});
