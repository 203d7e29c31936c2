import assert from "node:assert/strict";
import { cniPlugin } from "./plugin.ts";
import { env, FakeAgent, stdin, withAgent } from "./_plugin_fixture.ts";

/** A CNI error's code and message: a refusal is told by both. */
const pick = (r: { code: number; msg: string }) => ({ code: r.code, msg: r.msg });

Deno.test("DEL with a malformed network name still forgets the attachment", async () => {
  await withAgent(async (socket, agent) => {
    const out = await cniPlugin(env("DEL"), stdin(socket, { network: "blue net" }));
    assert.equal(out.code, 0, out.stdout);
    assert.deepEqual(agent.removed, ["u1"]);
  });
});

Deno.test("DEL tells the agent and prints nothing; it succeeds again and with the agent down", async () => {
  await withAgent(async (socket, agent) => {
    const first = await cniPlugin(env("DEL"), stdin(socket));
    const second = await cniPlugin(env("DEL", { CNI_NETNS: "" }), stdin(socket));
    assert.deepEqual([first.code, first.stdout, second.code, second.stdout], [0, "", 0, ""]);
    assert.deepEqual(agent.removed, ["u1", "u1"]);
  });
  const down = await cniPlugin(env("DEL"), stdin("/nonexistent/cni.sock"));
  assert.equal(down.code, 0);
  assert.equal(down.stdout, "");
});

Deno.test("CHECK passes when the agent finds the targets", async () => {
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("CHECK"), stdin(socket));
    assert.deepEqual([out.code, out.stdout], [0, ""]);
  });
});

Deno.test("CHECK reports mismatches as error code 100", async () => {
  const agent = new FakeAgent();
  agent.problems = ["target 10.70.0.5:8080 is not in the probe map"];
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("CHECK"), stdin(socket));
    assert.equal(out.code, 1);
    const result = JSON.parse(out.stdout);
    assert.equal(result.code, 100);
    assert.match(result.msg, /ns\/web .*10\.70\.0\.5:8080 is not in the probe map/);
  }, agent);
});

Deno.test("CHECK asks to try again later (code 11) when the agent is not ready", async () => {
  const agent = new FakeAgent();
  agent.error = Object.assign(new Error("No full pod list yet"), { retry: true });
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("CHECK"), stdin(socket));
    const result = JSON.parse(out.stdout);
    assert.equal(result.code, 11);
    assert.equal(result.msg, "Lace's agent is not ready to check: No full pod list yet");
  }, agent);
});

Deno.test("CHECK fails open when the agent is down", async () => {
  const out = await cniPlugin(env("CHECK"), stdin("/nonexistent/cni.sock"));
  assert.deepEqual([out.code, out.stdout], [0, ""]);
  assert.match(out.log.join("\n"), /did not answer/);
});

Deno.test("CHECK needs prevResult (code 7) and a version that has CHECK (code 1)", async () => {
  const noPrev = await cniPlugin(env("CHECK"), stdin("/x.sock", { prevResult: undefined }));
  assert.deepEqual(pick(JSON.parse(noPrev.stdout)), {
    code: 7,
    msg: 'Network configuration has no "prevResult" for CHECK',
  });
  const old = await cniPlugin(env("CHECK"), stdin("/x.sock", { cniVersion: "0.3.1" }));
  assert.deepEqual(pick(JSON.parse(old.stdout)), {
    code: 1,
    msg: 'CNI version "0.3.1" has no CHECK command (it needs 0.4.0 or later)',
  });
});

Deno.test("GC sends the valid attachments and the agent drops the others", async () => {
  await withAgent(async (socket, agent) => {
    await cniPlugin(env("ADD"), stdin(socket, { cniVersion: "1.1.0" }));
    await cniPlugin(
      env("ADD", {
        CNI_CONTAINERID: "other",
        CNI_ARGS: "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=b;K8S_POD_UID=u2",
      }),
      stdin(socket, { cniVersion: "1.1.0" }),
    );
    const gc = await cniPlugin(
      { CNI_COMMAND: "GC" },
      stdin(socket, {
        cniVersion: "1.1.0",
        prevResult: undefined,
        "cni.dev/valid-attachments": [{ containerID: "other", ifname: "eth0" }],
      }),
    );
    assert.deepEqual([gc.code, gc.stdout], [0, ""]);
    assert.deepEqual(agent.removed, ["u1"]);
  });
});

Deno.test("GC rejects a malformed attachment list with code 7", async () => {
  const out = await cniPlugin(
    { CNI_COMMAND: "GC" },
    stdin("/x.sock", { cniVersion: "1.1.0", "cni.dev/valid-attachments": [{ ifname: "eth0" }] }),
  );
  assert.deepEqual(pick(JSON.parse(out.stdout)), {
    code: 7,
    msg:
      '"cni.dev/valid-attachments" holds an entry without containerID and ifname: {"ifname":"eth0"}',
  });
});

Deno.test("STATUS always reports ready under 1.1.0 and is unknown before", async () => {
  const ok = await cniPlugin({ CNI_COMMAND: "STATUS" }, stdin("/x.sock", { cniVersion: "1.1.0" }));
  assert.deepEqual([ok.code, ok.stdout], [0, ""]);
  const old = await cniPlugin({ CNI_COMMAND: "STATUS" }, stdin("/x.sock"));
  assert.deepEqual(pick(JSON.parse(old.stdout)), {
    code: 1,
    msg: 'CNI version "1.0.0" has no STATUS command (it needs 1.1.0 or later)',
  });
});

Deno.test("VERSION lists the supported versions", async () => {
  const out = await cniPlugin({ CNI_COMMAND: "VERSION" }, JSON.stringify({ cniVersion: "0.4.0" }));
  assert.equal(out.code, 0);
  assert.deepEqual(JSON.parse(out.stdout), {
    cniVersion: "0.4.0",
    supportedVersions: ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"],
  });
});

Deno.test("bad input gives the spec's error codes, never an exception", async () => {
  const cases: [Record<string, string>, string, number, RegExp][] = [
    [
      env("ADD"),
      stdin("/x.sock", { cniVersion: "0.2.0" }),
      1,
      /^Incompatible CNI version "0\.2\.0"/,
    ],
    [env("ADD"), stdin("/x.sock", { timeout: "2m" }), 2, /^Unsupported value of "timeout": "2m"/],
    [env("ADD", { CNI_COMMAND: "BOGUS" }), stdin("/x.sock"), 4, /^Unknown CNI_COMMAND "BOGUS"/],
    [env("ADD", { CNI_NETNS: "" }), stdin("/x.sock"), 4, /CNI_NETNS/],
    [env("ADD", { CNI_ARGS: "garbage" }), stdin("/x.sock"), 4, /^Invalid CNI_ARGS pair "garbage"/],
    [env("ADD"), '{"cniVersion": ', 6, /is not valid JSON/],
    [env("ADD"), stdin("/x.sock", { network: 5 }), 7, /^"network" must be/],
    [
      env("ADD"),
      stdin("/x.sock", { prevResult: { ips: [{ address: 5 }] } }),
      7,
      /^"prevResult\.ips" holds an entry without an address/,
    ],
  ];
  for (const [e, input, code, why] of cases) {
    const out = await cniPlugin(e, input);
    assert.equal(out.code, 1, input);
    const result = JSON.parse(out.stdout);
    assert.equal(result.code, code, `${JSON.stringify(e.CNI_COMMAND)} ${input}: ${result.msg}`);
    assert.match(result.msg, why, input);
    assert.equal(typeof result.msg, "string");
    assert.ok(!/\bat .*\.ts:\d+/.test(result.msg), "no stack trace in the message");
  }
});

Deno.test("ADD fails open even when the transport throws something unexpected", async () => {
  const out = await cniPlugin(env("ADD"), stdin("/x.sock"), () => {
    throw new Error("boom");
  });
  assert.equal(out.code, 0);
  assert.match(out.log.join("\n"), /boom/);
});

Deno.test("an unexpected failure inside the plugin is error 999 with a message", async () => {
  const hostile = {
    get CNI_COMMAND(): string {
      throw new Error("environment exploded");
    },
  };
  const out = await cniPlugin(hostile, stdin("/x.sock"));
  assert.equal(out.code, 1);
  const result = JSON.parse(out.stdout);
  assert.equal(result.code, 999);
  assert.match(result.msg, /environment exploded/);
});
