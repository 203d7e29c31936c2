/**
 * Unit tests of the results the plugin writes: the addresses it takes from
 * prevResult, prevResult passed through in the configuration's version, and
 * the error and VERSION results.
 */
import assert from "node:assert/strict";
import { CniError, errorResult, versionResult } from "./spec.ts";
import { passThrough, resultAddresses } from "./spec_result.ts";
import { codeOf, errorOf } from "./_spec_fixture.ts";

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
  assert.equal(
    codeOf(() => resultAddresses({ ips: "10.0.0.1" }), /"prevResult\.ips" is not a list/),
    7,
  );
  assert.equal(
    codeOf(
      () => resultAddresses({ ips: [{ gateway: "1.1.1.1" }] }),
      /holds an entry without an address/,
    ),
    7,
  );
  assert.equal(
    codeOf(
      () => resultAddresses({ ips: [{ address: "host/24" }] }),
      /holds an address that is not an IP address: "host\/24"/,
    ),
    7,
  );
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

Deno.test("resultAddresses() reads only a number as an interface index, so a string names no interface", () => {
  const interfaces = [{ name: "veth0" }, { name: "eth0", sandbox: "/var/run/netns/p" }];
  assert.deepEqual(
    resultAddresses({ interfaces, ips: [{ address: "10.0.0.1/24", interface: "0" }] }),
    ["10.0.0.1"],
  );
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
