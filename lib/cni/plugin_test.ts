import assert from "node:assert/strict";
import { cniPlugin } from "./plugin.ts";
import { type Attachment, AttachmentRefusedError } from "./protocol.ts";
import { type CniHandler, type CniServer, startCniServer } from "./server.ts";

const prevResult = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "veth1" }, { name: "eth0", sandbox: "/var/run/netns/p" }],
  ips: [{ address: "10.70.0.5/16", gateway: "10.70.0.1", interface: 1 }],
  routes: [{ dst: "0.0.0.0/0" }],
  dns: {},
};

function env(command: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: "c0ffee",
    CNI_NETNS: "/var/run/netns/p",
    CNI_IFNAME: "eth0",
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_UID=u1",
    ...extra,
  };
}

function stdin(socket: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: "1.0.0",
    name: "blue",
    type: "lace",
    network: "blue",
    networkId: 7,
    socket,
    timeout: "200ms",
    prevResult,
    ...extra,
  });
}

class FakeAgent implements CniHandler {
  added: Attachment[] = [];
  removed: string[] = [];
  problems: string[] = [];
  delay?: Promise<void>;
  error?: Error;
  async registerAttachment(a: Attachment): Promise<void> {
    if (this.delay) await this.delay;
    if (this.error) throw this.error;
    this.added.push(a);
  }
  removeAttachment(uid: string): void {
    this.removed.push(uid);
  }
  check(_a: Attachment): Promise<{ problems: string[] }> {
    if (this.error) return Promise.reject(this.error);
    return Promise.resolve({ problems: this.problems });
  }
}

async function withAgent(
  fn: (socket: string, agent: FakeAgent) => Promise<void>,
  agent = new FakeAgent(),
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "lace-cni-" });
  let server: CniServer | undefined;
  try {
    server = await startCniServer(`${dir}/cni.sock`, agent);
    await fn(`${dir}/cni.sock`, agent);
  } finally {
    await server?.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("ADD registers the pod with the agent and prints prevResult unchanged", async () => {
  await withAgent(async (socket, agent) => {
    const out = await cniPlugin(env("ADD"), stdin(socket));
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.deepEqual(out.log, []);
    assert.deepEqual(agent.added, [{
      namespace: "ns",
      name: "web",
      uid: "u1",
      ips: ["10.70.0.5"],
      network: "blue",
      networkId: 7,
    }]);
  });
});

Deno.test("ADD without network keys leaves the network to the pod annotations", async () => {
  await withAgent(async (socket, agent) => {
    const conf = JSON.parse(stdin(socket));
    delete conf.network;
    delete conf.networkId;
    const out = await cniPlugin(env("ADD"), JSON.stringify(conf));
    assert.equal(out.code, 0);
    assert.equal(agent.added[0].network, undefined);
    assert.equal("networkId" in agent.added[0], false);
  });
});

Deno.test("ADD with a malformed network name fails closed with code 7 and registers nothing", async () => {
  await withAgent(async (socket, agent) => {
    const out = await cniPlugin(env("ADD"), stdin(socket, { network: "blue\u200b" }));
    assert.equal(out.code, 1);
    const result = JSON.parse(out.stdout);
    assert.equal(result.code, 7);
    assert.match(result.msg, /^"network" must be 1\.\.253 printable characters/);
    assert.deepEqual(agent.added, []);
  });
});

Deno.test("DEL with a malformed network name still forgets the attachment", async () => {
  await withAgent(async (socket, agent) => {
    const out = await cniPlugin(env("DEL"), stdin(socket, { network: "blue net" }));
    assert.equal(out.code, 0, out.stdout);
    assert.deepEqual(agent.removed, ["u1"]);
  });
});

Deno.test("ADD succeeds within the timeout when the agent is slow", async () => {
  const agent = new FakeAgent();
  const gate = Promise.withResolvers<void>();
  agent.delay = gate.promise;
  await withAgent(async (socket) => {
    const started = performance.now();
    const out = await cniPlugin(env("ADD"), stdin(socket, { timeout: "100ms" }));
    const took = performance.now() - started;
    gate.resolve();
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.ok(took >= 95 && took < 1000, `took ${took} ms`);
    assert.match(out.log.join("\n"), /did not answer within 100ms/);
  }, agent);
});

Deno.test("ADD succeeds when the agent is down", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-cni-" });
  try {
    const out = await cniPlugin(env("ADD"), stdin(`${dir}/missing.sock`));
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.match(out.log.join("\n"), /Cannot connect to .*missing\.sock/);
    assert.match(out.log.join("\n"), /pod watch registers its targets/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ADD succeeds when only a stale socket file is left", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-cni-" });
  try {
    const listener = Deno.listen({ transport: "unix", path: `${dir}/tmp.sock` });
    Deno.renameSync(`${dir}/tmp.sock`, `${dir}/cni.sock`);
    listener.close();
    const out = await cniPlugin(env("ADD"), stdin(`${dir}/cni.sock`));
    assert.equal(out.code, 0);
    assert.match(out.log.join("\n"), /Cannot connect/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ADD succeeds and logs when the agent replies with an error", async () => {
  const agent = new FakeAgent();
  agent.error = new Error("Writing probe targets failed: map full");
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("ADD"), stdin(socket));
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.match(out.log.join("\n"), /refused the targets: Writing probe targets failed/);
  }, agent);
});

Deno.test("ADD fails with code 101 naming the reason when the agent refuses the address", async () => {
  const agent = new FakeAgent();
  agent.error = new AttachmentRefusedError(
    "Address 10.70.0.5 is already used on this node by a pod of another network",
  );
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("ADD"), stdin(socket));
    assert.equal(out.code, 1);
    const result = JSON.parse(out.stdout);
    assert.equal(result.code, 101);
    assert.match(
      result.msg,
      /refused the attachment of pod ns\/web: Address 10\.70\.0\.5 is already used/,
    );
  }, agent);
});

Deno.test("ADD without the pod's uid in CNI_ARGS passes through without calling the agent", async () => {
  await withAgent(async (socket, agent) => {
    const out = await cniPlugin(
      env("ADD", { CNI_ARGS: "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web" }),
      stdin(socket),
    );
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.match(out.log.join("\n"), /no K8S_POD_UID/);
    assert.equal(agent.added.length, 0);
  });
});

Deno.test("ADD converts prevResult when its version differs from the configuration's", async () => {
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("ADD"), stdin(socket, { cniVersion: "0.4.0" }));
    assert.equal(out.code, 0);
    const result = JSON.parse(out.stdout);
    assert.equal(result.cniVersion, "0.4.0");
    assert.equal(result.ips[0].version, "4");
  });
});

Deno.test("ADD without prevResult is an invalid configuration (code 7)", async () => {
  const out = await cniPlugin(env("ADD"), stdin("/nonexistent.sock", { prevResult: undefined }));
  assert.equal(out.code, 1);
  const result = JSON.parse(out.stdout);
  assert.equal(result.code, 7);
  assert.equal(result.cniVersion, "1.0.0");
  assert.match(result.msg, /must be chained/);
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
    assert.equal(JSON.parse(out.stdout).code, 11);
  }, agent);
});

Deno.test("CHECK fails open when the agent is down", async () => {
  const out = await cniPlugin(env("CHECK"), stdin("/nonexistent/cni.sock"));
  assert.deepEqual([out.code, out.stdout], [0, ""]);
  assert.match(out.log.join("\n"), /did not answer/);
});

Deno.test("CHECK needs prevResult (code 7) and a version that has CHECK (code 1)", async () => {
  const noPrev = await cniPlugin(env("CHECK"), stdin("/x.sock", { prevResult: undefined }));
  assert.equal(JSON.parse(noPrev.stdout).code, 7);
  const old = await cniPlugin(env("CHECK"), stdin("/x.sock", { cniVersion: "0.3.1" }));
  assert.equal(JSON.parse(old.stdout).code, 1);
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
  assert.equal(JSON.parse(out.stdout).code, 7);
});

Deno.test("STATUS always reports ready under 1.1.0 and is unknown before", async () => {
  const ok = await cniPlugin({ CNI_COMMAND: "STATUS" }, stdin("/x.sock", { cniVersion: "1.1.0" }));
  assert.deepEqual([ok.code, ok.stdout], [0, ""]);
  const old = await cniPlugin({ CNI_COMMAND: "STATUS" }, stdin("/x.sock"));
  assert.equal(JSON.parse(old.stdout).code, 1);
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
  const cases: [Record<string, string>, string, number][] = [
    [env("ADD"), stdin("/x.sock", { cniVersion: "0.2.0" }), 1],
    [env("ADD"), stdin("/x.sock", { timeout: "2m" }), 2],
    [env("ADD", { CNI_COMMAND: "BOGUS" }), stdin("/x.sock"), 4],
    [env("ADD", { CNI_NETNS: "" }), stdin("/x.sock"), 4],
    [env("ADD", { CNI_ARGS: "garbage" }), stdin("/x.sock"), 4],
    [env("ADD"), '{"cniVersion": ', 6],
    [env("ADD"), stdin("/x.sock", { network: 5 }), 7],
    [env("ADD"), stdin("/x.sock", { prevResult: { ips: [{ address: 5 }] } }), 7],
  ];
  for (const [e, input, code] of cases) {
    const out = await cniPlugin(e, input);
    assert.equal(out.code, 1, input);
    const result = JSON.parse(out.stdout);
    assert.equal(result.code, code, `${JSON.stringify(e.CNI_COMMAND)} ${input}: ${result.msg}`);
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

/** Modules reachable from `root`, following dynamic imports only when `dynamic`. */
async function moduleGraph(root: string, dynamic: boolean): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(root, import.meta.url).pathname],
    stdout: "piped",
  }).output();
  assert.equal(out.code, 0, "deno info");
  const graph: {
    roots: string[];
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
    }[];
  } = JSON.parse(new TextDecoder().decode(out.stdout));
  const bySpecifier = new Map(graph.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const visit = (specifier: string) => {
    if (seen.has(specifier)) return;
    seen.add(specifier);
    for (const d of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (d.code && (dynamic || !d.isDynamic)) visit(d.code.specifier);
    }
  };
  visit(graph.roots[0]);
  return [...seen];
}

Deno.test("the CNI plugin's path (main.ts's static imports and the plugin) loads no Kubernetes client", async () => {
  // client-node costs about 0.5 s per plugin call; this is what keeps VERSION and ADD quick.
  const reached = [
    ...(await moduleGraph("../../main.ts", false)),
    ...(await moduleGraph("./plugin.ts", true)),
  ];
  assert.ok(reached.some((s) => s.endsWith("/lib/cni/plugin.ts")), "the graph was read");
  assert.deepEqual(reached.filter((s) => s.includes("client-node")), []);
});

Deno.test("the plugin itself reaches only the CNI folder and the small shared helpers", async () => {
  // Config, rules and the datapath stay off this path: each plugin call loads it anew.
  const reached = (await moduleGraph("./plugin.ts", true)).map((s) => s.replace(/^.*\/lib\//, ""));
  assert.deepEqual(reached.filter((s) => !s.startsWith("cni/")).sort(), [
    "duration.ts",
    "json.ts",
    "network_name.ts",
  ]);
});
