/**
 * The plugin's ADD with no agent to answer: it removes the pinned map's entries at the pod's
 * addresses itself (a fake purge here; tests/downtime_purge_test.ts does it on the kernel), and
 * the pod starts whatever that finds.
 */
import assert from "node:assert/strict";
import { AgentCallError, type AgentCallFailure, type CallAgent } from "./client.ts";
import { cniPlugin, type PurgeAddresses } from "./plugin.ts";
import type { Reply } from "./protocol.ts";
import type { PurgeReport } from "../datapath/address_purge.ts";
import { env, prevResult, stdin } from "./_plugin_fixture.ts";

const dualStack = {
  ...prevResult,
  ips: [...prevResult.ips, { address: "fd70::5/64", interface: 1 }],
};

function failing(kind: AgentCallFailure): CallAgent {
  return () => Promise.reject(new AgentCallError(kind, `the agent: ${kind}`));
}

function answering(reply: Partial<Reply>): CallAgent {
  return (_socket, request) => Promise.resolve({ v: 1, id: request.id, ...reply } as Reply);
}

/** A purge that records its calls and answers `report`. */
function recordingPurge(report: PurgeReport = { maps: [], problems: [] }) {
  const calls: { pinPath: string; ips: readonly string[] }[] = [];
  const purge: PurgeAddresses = (pinPath, ips) => {
    calls.push({ pinPath, ips });
    return Promise.resolve(report);
  };
  return { calls, purge };
}

for (const kind of ["unreachable", "timeout", "broken"] as const) {
  Deno.test(`ADD the agent does not answer (${kind}) removes the pinned map's entries at every address of the pod, and the pod starts`, async () => {
    const { calls, purge } = recordingPurge({
      maps: [{
        path: "/sys/fs/bpf/l/abi2/probe_targets",
        removed: ["10.70.0.5:8080", "[fd70::5]:9000"],
      }],
      problems: [],
    });
    const out = await cniPlugin(
      env("ADD"),
      stdin("/run/x.sock", { pinPath: "/sys/fs/bpf/l", prevResult: dualStack }),
      failing(kind),
      purge,
    );
    assert.equal(out.code, 0, out.stdout);
    assert.deepEqual(JSON.parse(out.stdout), dualStack);
    assert.deepEqual(calls, [{ pinPath: "/sys/fs/bpf/l", ips: ["10.70.0.5", "fd70::5"] }]);
    assert.match(
      out.log.join("\n"),
      /ADD ns\/web: removed the probe targets 10\.70\.0\.5:8080, \[fd70::5\]:9000 from \/sys\/fs\/bpf\/l\/abi2\/probe_targets/,
    );
  });
}

Deno.test("ADD the agent answers leaves the pinned map to it: accepted, failed or refused", async () => {
  for (
    const reply of [
      { ok: true },
      { ok: false, error: "Writing probe targets failed: map full" },
      { ok: false, error: "Address 10.70.0.5 is held", refused: true },
    ] as Partial<Reply>[]
  ) {
    const { calls, purge } = recordingPurge();
    const out = await cniPlugin(env("ADD"), stdin("/run/x.sock"), answering(reply), purge);
    assert.deepEqual(calls, [], JSON.stringify(reply));
    assert.equal(out.code, "refused" in reply ? 1 : 0, JSON.stringify(reply));
  }
});

Deno.test("ADD that cannot remove the stale entries still succeeds and says why on stderr", async () => {
  const problem = `pin path "/sys/fs/bpf/l" is owned by uid 1000, not root`;
  for (
    const purge of [
      recordingPurge({ maps: [], problems: [problem] }).purge,
      (() => Promise.reject(new Error("libbpf is gone"))) as PurgeAddresses,
    ]
  ) {
    const out = await cniPlugin(env("ADD"), stdin("/run/x.sock"), failing("unreachable"), purge);
    assert.equal(out.code, 0, out.stdout);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    const log = out.log.join("\n");
    assert.match(log, /ADD ns\/web: cannot remove the probe targets at 10\.70\.0\.5: /);
    assert.match(log, /owned by uid 1000, not root|unexpected: libbpf is gone/);
    assert.match(log, /may be tagged into the network of a pod that held these addresses before/);
  }
});

Deno.test("ADD with no agent and no entry at the pod's addresses says the map had none", async () => {
  const { purge } = recordingPurge({
    maps: [{ path: "/p/abi2/probe_targets", removed: [] }],
    problems: [],
  });
  const out = await cniPlugin(env("ADD"), stdin("/run/x.sock"), failing("unreachable"), purge);
  assert.equal(out.code, 0);
  assert.match(out.log.join("\n"), /no probe target at 10\.70\.0\.5 in \/p\/abi2\/probe_targets/);
});

Deno.test("ADD the agent does not answer under shared address sharing keeps every network's entries at the address, and the pod starts", async () => {
  const { calls, purge } = recordingPurge();
  const out = await cniPlugin(
    env("ADD"),
    stdin("/run/x.sock", { addressSharing: "shared", prevResult: dualStack }),
    failing("unreachable"),
    purge,
  );
  assert.equal(out.code, 0, out.stdout);
  assert.deepEqual(calls, []);
  assert.match(
    out.log.join("\n"),
    /addresses are shared between networks; the probe targets there are kept/,
  );
});

Deno.test("a lace entry whose addressSharing is neither exclusive nor shared is refused at ADD, saying so", async () => {
  const { calls, purge } = recordingPurge();
  const out = await cniPlugin(
    env("ADD"),
    stdin("/run/x.sock", { addressSharing: "open" }),
    failing("unreachable"),
    purge,
  );
  assert.notEqual(out.code, 0);
  assert.equal(
    JSON.parse(out.stdout).msg,
    `"addressSharing" must be "exclusive" or "shared": "open"`,
  );
  assert.deepEqual(calls, []);
});
