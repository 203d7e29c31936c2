/**
 * Unit tests of the network configuration on stdin: its version, the
 * commands it allows, and Lace's keys with their defaults and limits.
 */
import assert from "node:assert/strict";
import { CniError, ERR, SUPPORTED_VERSIONS } from "./spec.ts";
import { parseNetConf, peekVersion } from "./spec_netconf.ts";
import { codeOf, errorOf } from "./_spec_fixture.ts";

function conf(extra: Record<string, unknown> = {}, version = "1.0.0"): string {
  return JSON.stringify({ cniVersion: version, name: "blue", type: "lace", ...extra });
}

Deno.test("parseNetConf() applies the defaults for socket, timeout, pin path and address sharing", () => {
  const c = parseNetConf(conf(), "ADD");
  assert.equal(c.socket, "/run/lace/cni.sock");
  assert.equal(c.timeoutMs, 1000);
  assert.equal(c.pinPath, "/sys/fs/bpf/lace");
  assert.equal(c.addressSharing, "exclusive");
  assert.equal(c.network, undefined);
});

Deno.test("parseNetConf() reads Lace's keys", () => {
  const c = parseNetConf(
    conf({
      network: "blue",
      networkId: 7,
      socket: "/tmp/x.sock",
      timeout: "250ms",
      pinPath: "/sys/fs/bpf/l2",
    }),
    "ADD",
  );
  assert.equal(c.network, "blue");
  assert.equal(c.networkId, 7);
  assert.equal(c.socket, "/tmp/x.sock");
  assert.equal(c.timeoutMs, 250);
  assert.equal(c.pinPath, "/sys/fs/bpf/l2");
});

Deno.test("parseNetConf() reads addressSharing as exclusive or shared", () => {
  for (const addressSharing of ["exclusive", "shared"]) {
    assert.equal(parseNetConf(conf({ addressSharing }), "ADD").addressSharing, addressSharing);
  }
});

Deno.test("parseNetConf() accepts a decimal string network id", () => {
  assert.equal(parseNetConf(conf({ network: "b", networkId: "12" }), "ADD").networkId, 12);
});

Deno.test("parseNetConf() ignores keys it does not know", () => {
  const c = parseNetConf(conf({ runtimeConfig: { portMappings: [] }, capabilities: {} }), "ADD");
  assert.equal(c.name, "blue");
});

Deno.test("parseNetConf() rejects undecodable stdin with code 6", () => {
  assert.equal(
    codeOf(() => parseNetConf("{not json", "ADD"), /is not valid JSON/),
    ERR.decodeFailure,
  );
  assert.equal(
    codeOf(() => parseNetConf("[1,2]", "ADD"), /is not a JSON object/),
    ERR.decodeFailure,
  );
  assert.equal(codeOf(() => parseNetConf("", "ADD"), /is not valid JSON/), ERR.decodeFailure);
});

Deno.test("parseNetConf() rejects unsupported versions with code 1", () => {
  for (const v of ["0.2.0", "0.1.0", "2.0.0", "1.0", "banana"]) {
    assert.equal(
      codeOf(() => parseNetConf(conf({}, v), "ADD"), /^Incompatible CNI version "/),
      ERR.incompatibleVersion,
      v,
    );
  }
});

Deno.test("parseNetConf() accepts every supported version for ADD", () => {
  for (const v of SUPPORTED_VERSIONS) assert.equal(parseNetConf(conf({}, v), "ADD").cniVersion, v);
});

Deno.test("parseNetConf() refuses commands the version does not have with code 1", () => {
  assert.equal(codeOf(() => parseNetConf(conf({}, "0.3.1"), "CHECK"), /"0\.3\.1" has no CHECK/), 1);
  assert.equal(codeOf(() => parseNetConf(conf({}, "1.0.0"), "GC"), /"1\.0\.0" has no GC/), 1);
  assert.equal(
    codeOf(() => parseNetConf(conf({}, "0.4.0"), "STATUS"), /"0\.4\.0" has no STATUS/),
    1,
  );
  assert.equal(parseNetConf(conf({}, "0.4.0"), "CHECK").cniVersion, "0.4.0");
  assert.equal(parseNetConf(conf({}, "1.1.0"), "GC").cniVersion, "1.1.0");
});

Deno.test("parseNetConf() rejects a missing cniVersion, name or type with code 7", () => {
  assert.equal(
    codeOf(
      () => parseNetConf(JSON.stringify({ name: "a", type: "lace" }), "ADD"),
      /has no cniVersion string/,
    ),
    7,
  );
  assert.equal(
    codeOf(
      () => parseNetConf(JSON.stringify({ cniVersion: "1.0.0" }), "ADD"),
      /has no "name" string/,
    ),
    7,
  );
  assert.equal(
    codeOf(
      () => parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "a" }), "ADD"),
      /has no "type" string/,
    ),
    7,
  );
});

Deno.test("parseNetConf() rejects malformed Lace keys with code 7", () => {
  const networkId = /^"networkId" must be an integer 1\.\.65535 when "network" is set/;
  const network = /^"network" must be a non-empty string when "networkId" is set$/;
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ network: "blue" }, networkId],
    [{ networkId: 7 }, network],
    [{ network: "", networkId: 7 }, network],
    [{ network: "blue", networkId: 1.5 }, networkId],
    [{ network: "blue", networkId: "seven" }, networkId],
    [{ socket: "relative.sock" }, /^"socket" must be an absolute path: "relative\.sock"$/],
    [{ socket: 3 }, /^"socket" must be an absolute path: 3$/],
    [{ timeout: "soon" }, /^"timeout" must be a duration .*: "soon"$/],
    [{ timeout: 1000 }, /^"timeout" must be a duration .*: 1000$/],
    [{ prevResult: [1] }, /^"prevResult" must be an object$/],
    [{ pinPath: "sys/fs/bpf/lace" }, /^"pinPath" must be an absolute path: "sys\/fs\/bpf\/lace"$/],
    [{ pinPath: true }, /^"pinPath" must be an absolute path: true$/],
    [{ addressSharing: "open" }, /^"addressSharing" must be "exclusive" or "shared": "open"$/],
    [{ addressSharing: "" }, /^"addressSharing" must be "exclusive" or "shared": ""$/],
    [{ addressSharing: null }, /^"addressSharing" must be "exclusive" or "shared": null$/],
  ];
  for (const [extra, why] of bad) {
    assert.equal(codeOf(() => parseNetConf(conf(extra), "ADD"), why), 7, JSON.stringify(extra));
  }
});

Deno.test("parseNetConf() reports a well-formed but unsupported value with code 2 naming it", () => {
  for (const extra of [{ network: "b", networkId: 70000 }, { network: "b", networkId: 0 }]) {
    try {
      parseNetConf(conf(extra), "ADD");
      assert.fail("expected an error");
    } catch (e) {
      assert.ok(e instanceof CniError);
      assert.equal(e.code, ERR.unsupportedField);
      assert.match(e.message, /"networkId": /);
      assert.ok(e.message.includes(String(extra.networkId)));
    }
  }
  assert.equal(
    codeOf(
      () => parseNetConf(conf({ timeout: "5m" }), "ADD"),
      /^Unsupported value of "timeout": "5m" \(supported: 1ms\.\.30s\)$/,
    ),
    2,
  );
});

Deno.test("parseNetConf() reads the timeout as Go's time.ParseDuration does", () => {
  const timeout = (t: string) => parseNetConf(conf({ timeout: t }), "ADD").timeoutMs;
  assert.equal(timeout("1s"), 1000);
  assert.equal(timeout("1.5s"), 1500);
  assert.equal(timeout("20ms"), 20);
  assert.equal(timeout("1s500ms"), 1500);
  assert.equal(timeout("1.s"), 1000);
  assert.equal(timeout("30s"), 30_000);
});

Deno.test("parseNetConf() still allows spaces around the timeout, so no configuration that worked fails now", () => {
  // Go would refuse them; the plugin always trimmed, and a refused configuration blocks pods.
  assert.equal(parseNetConf(conf({ timeout: " 1.25s " }), "ADD").timeoutMs, 1250);
});

Deno.test("parseNetConf() refuses a timeout Go reads but the plugin does not support with code 2", () => {
  for (const t of ["1h", "1m", "2m", "31s", "-1s", "0", "500us"]) {
    assert.equal(
      codeOf(() => parseNetConf(conf({ timeout: t }), "ADD"), /^Unsupported value of "timeout"/),
      ERR.unsupportedField,
      t,
    );
  }
});

Deno.test("parseNetConf() refuses a timeout Go cannot read with code 7", () => {
  for (const t of ["soon", "5", "1", "1d", "", "1sx", "x1s", "ms", "1 s"]) {
    assert.equal(
      codeOf(() => parseNetConf(conf({ timeout: t }), "ADD"), /^"timeout" must be a duration/),
      ERR.invalidConfig,
      t,
    );
  }
});

Deno.test("parseNetConf() accepts a timeout of 1ms..30s and refuses 0ms and 30.001s with code 2", () => {
  assert.equal(parseNetConf(conf({ timeout: "1ms" }), "ADD").timeoutMs, 1);
  assert.equal(parseNetConf(conf({ timeout: "30s" }), "ADD").timeoutMs, 30_000);
  for (const timeout of ["0ms", "30001ms", "30.001s"]) {
    const e = errorOf(() => parseNetConf(conf({ timeout }), "ADD"));
    assert.equal(e.code, ERR.unsupportedField, timeout);
    assert.equal(
      e.message,
      `Unsupported value of "timeout": "${timeout}" (supported: 1ms..30s)`,
    );
  }
});

Deno.test("parseNetConf() accepts network ids 1 and 65535 and refuses 0 and 65536 with code 2", () => {
  for (const id of [1, 65535, "1", "65535"]) {
    assert.equal(parseNetConf(conf({ network: "b", networkId: id }), "ADD").networkId, Number(id));
  }
  for (const id of [0, 65536, "0", "65536"]) {
    const e = errorOf(() => parseNetConf(conf({ network: "b", networkId: id }), "ADD"));
    assert.equal(e.code, ERR.unsupportedField, String(id));
    assert.equal(
      e.message,
      `Unsupported value of "networkId": ${JSON.stringify(id)} (network ids are 1..65535)`,
    );
  }
});

Deno.test("parseNetConf() refuses a network id string that is not 1 to 5 decimal digits with code 7", () => {
  for (const id of ["123456", "x12", "12x", "", "1e3", " 12"]) {
    const e = errorOf(() => parseNetConf(conf({ network: "b", networkId: id }), "ADD"));
    assert.equal(e.code, ERR.invalidConfig, id);
    assert.equal(
      e.message,
      `"networkId" must be an integer 1..65535 when "network" is set: ${JSON.stringify(id)}`,
    );
  }
});

Deno.test("parseNetConf() names each missing or malformed key in its code 7 message", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ name: "" }, `Network configuration has no "name" string`],
    [{ name: 5 }, `Network configuration has no "name" string`],
    [{ type: "" }, `Network configuration has no "type" string`],
    [{ type: 5 }, `Network configuration has no "type" string`],
    [{ cniVersion: "" }, "Network configuration has no cniVersion string"],
    [{ cniVersion: 1 }, "Network configuration has no cniVersion string"],
    [{ networkId: 7 }, `"network" must be a non-empty string when "networkId" is set`],
    [{ network: 5, networkId: 7 }, `"network" must be a non-empty string when "networkId" is set`],
    [{ prevResult: "x" }, `"prevResult" must be an object`],
    [{ socket: "x.sock" }, `"socket" must be an absolute path: "x.sock"`],
    [{ pinPath: "lace" }, `"pinPath" must be an absolute path: "lace"`],
    [{ timeout: 5 }, `"timeout" must be a duration such as "1s" or "500ms": 5`],
  ];
  for (const [extra, message] of cases) {
    const e = errorOf(() => parseNetConf(conf(extra), "ADD"));
    assert.deepEqual([e.code, e.message], [ERR.invalidConfig, message], JSON.stringify(extra));
  }
});

Deno.test("parseNetConf() ignores a null prevResult and keeps an object one", () => {
  assert.equal(parseNetConf(conf({ prevResult: null }), "ADD").prevResult, undefined);
  assert.deepEqual(parseNetConf(conf({ prevResult: { ips: [] } }), "ADD").prevResult, { ips: [] });
});

Deno.test("parseNetConf() says why stdin is not a configuration", () => {
  const e = errorOf(() => parseNetConf("{", "ADD"));
  assert.equal(e.message, "Network configuration on stdin is not valid JSON");
  assert.ok(e.details, "the parser's own message is kept as details");
  assert.equal(
    errorOf(() => parseNetConf("null", "ADD")).message,
    "Network configuration on stdin is not a JSON object",
  );
  assert.equal(
    errorOf(() => parseNetConf(conf({}, "9.9.9"), "ADD")).message,
    `Incompatible CNI version "9.9.9": Lace's plugin supports ${SUPPORTED_VERSIONS.join(", ")}`,
  );
  assert.equal(
    errorOf(() => parseNetConf(conf({}, "0.3.1"), "CHECK")).message,
    `CNI version "0.3.1" has no CHECK command (it needs 0.4.0 or later)`,
  );
});

Deno.test("peekVersion() returns a configuration's cniVersion string, else empty", () => {
  assert.equal(peekVersion(conf({}, "0.4.0")), "0.4.0");
  assert.equal(peekVersion(JSON.stringify({ cniVersion: 4 })), "");
  assert.equal(peekVersion("[]"), "");
  assert.equal(peekVersion("null"), "");
  assert.equal(peekVersion("{"), "");
});

Deno.test("parseNetConf() refuses a network id that is neither a number nor a string", () => {
  for (const networkId of [[12], true, { id: 12 }]) {
    assert.equal(
      codeOf(
        () => parseNetConf(conf({ network: "b", networkId }), "ADD"),
        /^"networkId" must be an integer 1\.\.65535 when "network" is set/,
      ),
      7,
    );
  }
});

Deno.test("parseNetConf() refuses at ADD and CHECK a network name no annotation could carry, with code 7 saying what to give", () => {
  for (const network of ["blue net", "blue\n", "blue\u202e", "blue\u200b", "x".repeat(254)]) {
    for (const command of ["ADD", "CHECK"] as const) {
      const e = errorOf(() => parseNetConf(conf({ network, networkId: 7 }), command));
      assert.equal(e.code, ERR.invalidConfig, JSON.stringify(network));
      assert.match(
        e.message,
        /^"network" must be 1\.\.253 printable characters without spaces: .*: give the name Lace's network plugin writes in its pods' network annotation \(the agent's --network-annotation, lace\.io\/network by default\)$/s,
      );
    }
  }
  assert.equal(parseNetConf(conf({ network: "blå-2", networkId: 7 }), "ADD").network, "blå-2");
});

Deno.test("parseNetConf() goes on without a malformed network at DEL, GC and STATUS, which use none", () => {
  for (const command of ["DEL", "GC", "STATUS"] as const) {
    const c = parseNetConf(conf({ network: "blue net", networkId: 7 }, "1.1.0"), command);
    assert.equal(c.network, undefined, command);
    assert.equal(c.networkId, undefined, command);
  }
});

Deno.test("parseNetConf() goes on at DEL, GC and STATUS without network keys that ADD refuses", () => {
  const bad = [
    { network: "", networkId: 7 },
    { network: 42, networkId: 7 },
    { networkId: 7 },
    { network: "blue" },
    { network: "blue", networkId: 0 },
    { network: "blue", networkId: "seven" },
  ];
  for (const keys of bad) {
    // ADD refuses each (code 7 or 2); the commands that use no network must not.
    assert.ok(([ERR.invalidConfig, ERR.unsupportedField] as number[]).includes(
      codeOf(
        () => parseNetConf(conf(keys), "ADD"),
        /^("network" must|"networkId" must|Unsupported value of "networkId")/,
      ),
    ));
    for (const command of ["DEL", "GC", "STATUS"] as const) {
      const c = parseNetConf(conf(keys, "1.1.0"), command);
      assert.equal(c.network, undefined, `${command} ${JSON.stringify(keys)}`);
      assert.equal(c.networkId, undefined, `${command} ${JSON.stringify(keys)}`);
    }
  }
});
