/**
 * Unit tests of the environment a runtime runs the plugin with: CNI_COMMAND,
 * the ids, CNI_IFNAME and the Kubernetes CNI_ARGS.
 */
import assert from "node:assert/strict";
import { CniError, ERR } from "./spec.ts";
import { parseCniArgs, parseEnv } from "./spec_env.ts";
import { codeOf, errorOf } from "./_spec_fixture.ts";

const addEnv = {
  CNI_COMMAND: "ADD",
  CNI_CONTAINERID: "abc",
  CNI_NETNS: "/var/run/netns/p",
  CNI_IFNAME: "eth0",
  CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_UID=u1",
};

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
    codeOf(
      () => parseEnv({ ...addEnv, CNI_COMMAND: "UPDATE" }),
      /^Unknown CNI_COMMAND "UPDATE": expected one of ADD, DEL/,
    ),
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
  assert.equal(
    codeOf(() => parseEnv({ ...addEnv, CNI_IFNAME: "a/b" }), /^Invalid CNI_IFNAME "a\/b"$/),
    4,
  );
});

Deno.test("parseCniArgs() rejects a pair without = with code 4", () => {
  assert.equal(
    codeOf(() => parseCniArgs("K8S_POD_NAME"), /^Invalid CNI_ARGS pair "K8S_POD_NAME"/),
    4,
  );
  assert.deepEqual(parseCniArgs("A=1;;B=x=y"), { A: "1", B: "x=y" });
  assert.deepEqual(parseCniArgs(""), {});
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
