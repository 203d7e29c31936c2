import assert from "node:assert/strict";
import {
  CniError,
  compareVersions,
  ERR,
  errorResult,
  parseCniArgs,
  parseEnv,
  parseNetConf,
  passThrough,
  peekVersion,
  resultAddresses,
  SUPPORTED_VERSIONS,
  versionResult,
} from "./spec.ts";

const addEnv = {
  CNI_COMMAND: "ADD",
  CNI_CONTAINERID: "abc",
  CNI_NETNS: "/var/run/netns/p",
  CNI_IFNAME: "eth0",
  CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_UID=u1",
};

function conf(extra: Record<string, unknown> = {}, version = "1.0.0"): string {
  return JSON.stringify({ cniVersion: version, name: "blue", type: "lace", ...extra });
}

function codeOf(fn: () => unknown): number {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CniError, `expected CniError, got ${e}`);
    return e.code;
  }
  assert.fail("expected a CniError");
}

Deno.test("parseEnv() reads the command, ids and the Kubernetes CNI_ARGS", () => {
  const env = parseEnv(addEnv);
  assert.equal(env.command, "ADD");
  assert.equal(env.containerId, "abc");
  assert.equal(env.ifname, "eth0");
  assert.deepEqual(env.args, {
    IgnoreUnknown: "1",
    K8S_POD_NAMESPACE: "ns",
    K8S_POD_NAME: "web",
    K8S_POD_UID: "u1",
  });
});

Deno.test("parseEnv() rejects an unknown command with code 4", () => {
  assert.equal(
    codeOf(() => parseEnv({ ...addEnv, CNI_COMMAND: "UPDATE" })),
    ERR.invalidEnvironment,
  );
});

Deno.test("parseEnv() names every missing variable of ADD with code 4", () => {
  try {
    parseEnv({ CNI_COMMAND: "ADD", CNI_IFNAME: "eth0" });
    assert.fail("expected an error");
  } catch (e) {
    assert.ok(e instanceof CniError);
    assert.equal(e.code, 4);
    assert.match(e.message, /CNI_CONTAINERID, CNI_NETNS/);
  }
});

Deno.test("parseEnv() lets DEL run without CNI_NETNS", () => {
  const env = parseEnv({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "abc", CNI_IFNAME: "eth0" });
  assert.equal(env.netns, "");
});

Deno.test("parseEnv() needs nothing for VERSION, GC and STATUS", () => {
  for (const command of ["VERSION", "GC", "STATUS"]) {
    assert.equal(parseEnv({ CNI_COMMAND: command }).command, command);
  }
});

Deno.test("parseEnv() rejects an interface name with a slash", () => {
  assert.equal(codeOf(() => parseEnv({ ...addEnv, CNI_IFNAME: "a/b" })), 4);
});

Deno.test("parseCniArgs() rejects a pair without = with code 4", () => {
  assert.equal(codeOf(() => parseCniArgs("K8S_POD_NAME")), 4);
  assert.deepEqual(parseCniArgs("A=1;;B=x=y"), { A: "1", B: "x=y" });
  assert.deepEqual(parseCniArgs(""), {});
});

Deno.test("parseNetConf() applies the defaults for socket and timeout", () => {
  const c = parseNetConf(conf(), "ADD");
  assert.equal(c.socket, "/run/lace/cni.sock");
  assert.equal(c.timeoutMs, 1000);
  assert.equal(c.network, undefined);
});

Deno.test("parseNetConf() reads Lace's keys", () => {
  const c = parseNetConf(
    conf({ network: "blue", networkId: 7, socket: "/tmp/x.sock", timeout: "250ms" }),
    "ADD",
  );
  assert.equal(c.network, "blue");
  assert.equal(c.networkId, 7);
  assert.equal(c.socket, "/tmp/x.sock");
  assert.equal(c.timeoutMs, 250);
});

Deno.test("parseNetConf() accepts a decimal string network id", () => {
  assert.equal(parseNetConf(conf({ network: "b", networkId: "12" }), "ADD").networkId, 12);
});

Deno.test("parseNetConf() ignores keys it does not know", () => {
  const c = parseNetConf(conf({ runtimeConfig: { portMappings: [] }, capabilities: {} }), "ADD");
  assert.equal(c.name, "blue");
});

Deno.test("parseNetConf() rejects undecodable stdin with code 6", () => {
  assert.equal(codeOf(() => parseNetConf("{not json", "ADD")), ERR.decodeFailure);
  assert.equal(codeOf(() => parseNetConf("[1,2]", "ADD")), ERR.decodeFailure);
  assert.equal(codeOf(() => parseNetConf("", "ADD")), ERR.decodeFailure);
});

Deno.test("parseNetConf() rejects unsupported versions with code 1", () => {
  for (const v of ["0.2.0", "0.1.0", "2.0.0", "1.0", "banana"]) {
    assert.equal(codeOf(() => parseNetConf(conf({}, v), "ADD")), ERR.incompatibleVersion, v);
  }
});

Deno.test("parseNetConf() accepts every supported version for ADD", () => {
  for (const v of SUPPORTED_VERSIONS) assert.equal(parseNetConf(conf({}, v), "ADD").cniVersion, v);
});

Deno.test("parseNetConf() refuses commands the version does not have with code 1", () => {
  assert.equal(codeOf(() => parseNetConf(conf({}, "0.3.1"), "CHECK")), 1);
  assert.equal(codeOf(() => parseNetConf(conf({}, "1.0.0"), "GC")), 1);
  assert.equal(codeOf(() => parseNetConf(conf({}, "0.4.0"), "STATUS")), 1);
  assert.equal(parseNetConf(conf({}, "0.4.0"), "CHECK").cniVersion, "0.4.0");
  assert.equal(parseNetConf(conf({}, "1.1.0"), "GC").cniVersion, "1.1.0");
});

Deno.test("parseNetConf() rejects a missing cniVersion, name or type with code 7", () => {
  assert.equal(codeOf(() => parseNetConf(JSON.stringify({ name: "a", type: "lace" }), "ADD")), 7);
  assert.equal(codeOf(() => parseNetConf(JSON.stringify({ cniVersion: "1.0.0" }), "ADD")), 7);
  assert.equal(
    codeOf(() => parseNetConf(JSON.stringify({ cniVersion: "1.0.0", name: "a" }), "ADD")),
    7,
  );
});

Deno.test("parseNetConf() rejects malformed Lace keys with code 7", () => {
  const bad = [
    { network: "blue" },
    { networkId: 7 },
    { network: "", networkId: 7 },
    { network: "blue", networkId: 1.5 },
    { network: "blue", networkId: "seven" },
    { socket: "relative.sock" },
    { socket: 3 },
    { timeout: "soon" },
    { timeout: 1000 },
    { prevResult: [1] },
  ];
  for (const extra of bad) {
    assert.equal(codeOf(() => parseNetConf(conf(extra), "ADD")), 7, JSON.stringify(extra));
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
  assert.equal(codeOf(() => parseNetConf(conf({ timeout: "5m" }), "ADD")), 2);
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
    assert.equal(codeOf(() => parseNetConf(conf({ timeout: t }), "ADD")), ERR.unsupportedField, t);
  }
});

Deno.test("parseNetConf() refuses a timeout Go cannot read with code 7", () => {
  for (const t of ["soon", "5", "1", "1d", "", "1sx", "x1s", "ms", "1 s"]) {
    assert.equal(codeOf(() => parseNetConf(conf({ timeout: t }), "ADD")), ERR.invalidConfig, t);
  }
});

const ptpResult = {
  cniVersion: "1.0.0",
  interfaces: [
    { name: "veth1234", mac: "aa:bb:cc:dd:ee:ff" },
    { name: "eth0", mac: "aa:bb:cc:dd:ee:00", sandbox: "/var/run/netns/p" },
  ],
  ips: [
    { address: "10.70.0.5/16", gateway: "10.70.0.1", interface: 1 },
    { address: "fd70::5/64", interface: 1 },
    { address: "10.70.0.1/32", interface: 0 },
  ],
  routes: [{ dst: "0.0.0.0/0" }],
  dns: {},
};

Deno.test("resultAddresses() takes the sandbox's addresses without prefix length", () => {
  assert.deepEqual(resultAddresses(ptpResult), ["10.70.0.5", "fd70::5"]);
});

Deno.test("resultAddresses() takes addresses without an interface index", () => {
  assert.deepEqual(resultAddresses({ ips: [{ address: "10.0.0.2/24" }] }), ["10.0.0.2"]);
  assert.deepEqual(resultAddresses({}), []);
});

Deno.test("resultAddresses() rejects malformed ips with code 7", () => {
  assert.equal(codeOf(() => resultAddresses({ ips: "10.0.0.1" })), 7);
  assert.equal(codeOf(() => resultAddresses({ ips: [{ gateway: "1.1.1.1" }] })), 7);
  assert.equal(codeOf(() => resultAddresses({ ips: [{ address: "host/24" }] })), 7);
});

Deno.test("passThrough() returns prevResult unchanged in its own version", () => {
  assert.equal(passThrough(ptpResult, "1.0.0"), ptpResult);
});

Deno.test("passThrough() adds ips[].version when converting 1.0.0 to 0.4.0", () => {
  const out = passThrough(ptpResult, "0.4.0");
  assert.equal(out.cniVersion, "0.4.0");
  const ips = out.ips as { address: string; version: string }[];
  assert.deepEqual(ips.map((ip) => ip.version), ["4", "6", "4"]);
  assert.deepEqual(out.interfaces, ptpResult.interfaces);
});

Deno.test("passThrough() drops ips[].version when converting 0.4.0 to 1.0.0", () => {
  const old = { cniVersion: "0.4.0", ips: [{ version: "4", address: "10.0.0.2/24" }] };
  assert.deepEqual(passThrough(old, "1.0.0"), {
    cniVersion: "1.0.0",
    ips: [{ address: "10.0.0.2/24" }],
  });
});

Deno.test("errorResult() carries code, msg and details in the config's version", () => {
  const err = new CniError(7, "Bad", "more");
  assert.deepEqual(errorResult(err, "0.4.0"), {
    cniVersion: "0.4.0",
    code: 7,
    msg: "Bad",
    details: "more",
  });
  assert.equal(errorResult(err, "9.9.9").cniVersion, "1.0.0");
});

Deno.test("versionResult() lists the supported versions and echoes a supported ask", () => {
  assert.deepEqual(versionResult("0.4.0"), {
    cniVersion: "0.4.0",
    supportedVersions: ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"],
  });
  assert.equal(versionResult("").cniVersion, "1.1.0");
});

Deno.test("compareVersions() compares numerically", () => {
  assert.equal(compareVersions("0.10.0", "0.4.0"), 1);
  assert.equal(compareVersions("1.0.0", "1.0.0"), 0);
  assert.equal(compareVersions("0.3.1", "0.4.0"), -1);
});

/** The CniError a call throws (fails the test when it throws none or another error). */
function errorOf(fn: () => unknown): CniError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CniError, `expected CniError, got ${e}`);
    return e;
  }
  assert.fail("expected a CniError");
}

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

Deno.test("parseEnv() requires CNI_NETNS for CHECK, and only the container id and ifname for DEL", () => {
  const e = errorOf(() => parseEnv({ ...addEnv, CNI_COMMAND: "CHECK", CNI_NETNS: "" }));
  assert.equal(e.message, "Missing environment variables for CHECK: CNI_NETNS");
  assert.equal(
    errorOf(() => parseEnv({ CNI_COMMAND: "DEL" })).message,
    "Missing environment variables for DEL: CNI_CONTAINERID, CNI_IFNAME",
  );
  assert.equal(
    errorOf(() => parseEnv({ CNI_COMMAND: "FOO" })).message,
    `Unknown CNI_COMMAND "FOO": expected one of ADD, DEL, CHECK, VERSION, GC, STATUS`,
  );
});

Deno.test("parseCniArgs() skips empty pairs and blank text, and refuses a pair with an empty key", () => {
  assert.deepEqual(parseCniArgs("  "), {});
  assert.deepEqual(parseCniArgs("A=1;;B=x=y;"), { A: "1", B: "x=y" });
  assert.equal(
    errorOf(() => parseCniArgs("=v")).message,
    `Invalid CNI_ARGS pair "=v": expected KEY=VALUE pairs separated by ";"`,
  );
});

Deno.test("resultAddresses() keeps an address once, and names a malformed entry", () => {
  assert.deepEqual(
    resultAddresses({ ips: [{ address: "10.0.0.1/24" }, { address: "10.0.0.1/32" }] }),
    ["10.0.0.1"],
  );
  assert.deepEqual(resultAddresses({}), []);
  assert.equal(
    errorOf(() => resultAddresses({ ips: {} })).message,
    `"prevResult.ips" is not a list`,
  );
  assert.equal(
    errorOf(() => resultAddresses({ ips: [{ address: 1 }] })).message,
    `"prevResult.ips" holds an entry without an address: {"address":1}`,
  );
  for (const address of ["x10.0.0.1/24", "10.0.0.1x/24"]) {
    assert.equal(
      errorOf(() => resultAddresses({ ips: [{ address }] })).message,
      `"prevResult.ips" holds an address that is not an IP address: "${address}"`,
    );
  }
});

Deno.test("resultAddresses() keeps an address whose interface index names no interface", () => {
  assert.deepEqual(
    resultAddresses({ interfaces: [], ips: [{ address: "10.0.0.1/24", interface: 3 }] }),
    ["10.0.0.1"],
  );
});

Deno.test("CniError is named so and has empty details unless given", () => {
  const e = new CniError(7, "bad");
  assert.deepEqual([e.name, e.code, e.message, e.details], ["CniError", 7, "bad", ""]);
  assert.deepEqual(errorResult(e, "1.0.0"), { cniVersion: "1.0.0", code: 7, msg: "bad" });
});

Deno.test("parseEnv() names an empty command and a bad interface, and defaults absent ids to empty", () => {
  assert.equal(
    errorOf(() => parseEnv({})).message,
    `Unknown CNI_COMMAND "": expected one of ADD, DEL, CHECK, VERSION, GC, STATUS`,
  );
  assert.equal(
    errorOf(() => parseEnv({ ...addEnv, CNI_IFNAME: "a/b" })).message,
    `Invalid CNI_IFNAME "a/b"`,
  );
  const v = parseEnv({ CNI_COMMAND: "VERSION" });
  assert.deepEqual([v.containerId, v.netns, v.ifname, v.args], ["", "", "", {}]);
});

Deno.test("parseNetConf() refuses a network id that is neither a number nor a string", () => {
  for (const networkId of [[12], true, { id: 12 }]) {
    assert.equal(codeOf(() => parseNetConf(conf({ network: "b", networkId }), "ADD")), 7);
  }
});

Deno.test("passThrough() takes a prevResult without a version as already in the configuration's", () => {
  const ips = [{ address: "10.0.0.1/24", version: "4" }];
  assert.deepEqual(passThrough({ ips }, "1.0.0"), { cniVersion: "1.0.0", ips });
});

Deno.test("passThrough() converts a result without ips, and keeps ips entries that are not objects", () => {
  assert.deepEqual(passThrough({ cniVersion: "0.4.0" }, "1.0.0"), { cniVersion: "1.0.0" });
  assert.deepEqual(passThrough({ cniVersion: "1.0.0", ips: ["x", {}] }, "0.4.0"), {
    cniVersion: "0.4.0",
    ips: ["x", { version: "4" }],
  });
});
