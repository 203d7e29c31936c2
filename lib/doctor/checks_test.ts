import assert from "node:assert/strict";
import type { Check, NodeSnapshot } from "./check.ts";
import { evaluate } from "./checks.ts";
import { ABI_VERSION } from "../datapath/probe_map.ts";

const K = "/sys/fs/cgroup/system.slice/kubelet.service";
const SHA = "ab".repeat(32);

/** A snapshot of a node where everything is right. */
function healthy(): NodeSnapshot {
  return {
    pinPath: "/sys/fs/bpf/lace",
    bpffsMounts: ["/sys/fs/bpf"],
    pinPathFsType: "bpf",
    bpffsModes: [{ mountPoint: "/sys/fs/bpf", mode: 0o700 }],
    pinDirProblems: [],
    pinDirOpeners: [],
    mapPinned: true,
    layouts: [ABI_VERSION],
    links: ["connect4", "connect6"].map((program) => ({
      program,
      pinned: true,
      alive: true,
      cgroupId: 77n,
      progId: 5,
    })),
    info: { abiVersion: ABI_VERSION, objectSha256: SHA },
    binarySha256: SHA,
    binaryAbi: ABI_VERSION,
    cgroup2Mounts: ["/sys/fs/cgroup"],
    kubeletCgroup: { configured: K, path: K, error: null, id: 77n },
    kubelets: [{ pid: 10, comm: "kubelet", cgroupDir: K }],
    otherKubelets: [],
    otherKubeletsNotListed: 0,
    apiServers: [],
    extraProcesses: [],
    agent: {
      addr: "127.0.0.1:9808",
      healthz: 200,
      readyz: { status: 200, body: "ok\n" },
      targets: [{ family: "ipv4", address: "10.0.0.1", port: 80, networkId: 1, mark: 0x11000 }],
      unmatched: [],
      error: null,
    },
    mapEntries: 1,
    counters: {
      connect4Seen: 10n,
      connect4Tagged: 4n,
      connect6Seen: 0n,
      connect6Tagged: 0n,
      setsockoptFailed: 0n,
    },
    cgroupPathOf: (id) => id === 99n ? "/sys/fs/cgroup/other" : null,
  };
}

function failing(checks: Check[]): string[] {
  return checks.filter((c) => !c.ok).map((c) => c.name);
}

function byName(checks: Check[], name: string): Check {
  const c = checks.find((x) => x.name === name);
  assert.ok(c, `no check "${name}"`);
  return c;
}

Deno.test("evaluate() passes every check on a healthy node", () => {
  const checks = evaluate(healthy());
  assert.deepEqual(failing(checks), []);
  assert.ok(checks.every((c) => c.fix === ""));
  assert.match(byName(checks, "tagged-connects").message, /4 of 10 connects/);
});

Deno.test("evaluate() says when bpffs is not mounted and how to mount it", () => {
  const s = { ...healthy(), bpffsMounts: [], pinPathFsType: "sysfs" };
  const c = byName(evaluate(s), "bpffs");
  assert.equal(c.ok, false);
  assert.match(c.fix, /mount -t bpf -o mode=0700 bpf \/sys\/fs\/bpf/);
});

Deno.test("evaluate() warns of a bpffs every local user may write to, with the fix", () => {
  assert.equal(evaluate(healthy()).find((c) => c.name === "bpffs-mode"), undefined);
  const s = { ...healthy(), bpffsModes: [{ mountPoint: "/sys/fs/bpf", mode: 0o1777 }] };
  const c = byName(evaluate(s), "bpffs-mode");
  assert.equal(c.ok, false);
  assert.equal(c.severity, "warning");
  assert.match(c.message, /"\/sys\/fs\/bpf" \(mode 01777\) is writable by every local user/);
  assert.match(c.fix, /chmod 0700 \/sys\/fs\/bpf[^]*-o mode=0700/);
});

Deno.test("evaluate() fails on a pin directory someone else owns, and warns of a readable one", () => {
  assert.equal(evaluate(healthy()).find((c) => c.name === "pin-dirs"), undefined);
  const theirs = {
    problem: 'Pin path "/sys/fs/bpf/lace" is owned by uid 65534',
    tightenable: false,
  };
  const readable = { problem: 'Pin path "/sys/fs/bpf/lace" is readable', tightenable: true };
  const refused = byName(evaluate({ ...healthy(), pinDirProblems: [theirs] }), "pin-dirs");
  assert.equal(refused.severity, "error");
  assert.match(refused.message, /owned by uid 65534/);
  assert.match(refused.fix, /refuses to start/);
  const loose = byName(evaluate({ ...healthy(), pinDirProblems: [readable] }), "pin-dirs");
  assert.equal(loose.severity, "warning");
  assert.match(loose.fix, /0700 at its next start/);
});

Deno.test("evaluate() names other users' processes that hold a pin directory open", () => {
  assert.equal(evaluate(healthy()).find((c) => c.name === "pin-dir-openers"), undefined);
  const opener = { dir: "/sys/fs/bpf/lace", pid: 4242, uid: 65534, comm: "sleep" };
  const c = byName(evaluate({ ...healthy(), pinDirOpeners: [opener] }), "pin-dir-openers");
  assert.equal(c.severity, "error");
  assert.match(c.message, /pid 4242 \(uid 65534, sleep\) on "\/sys\/fs\/bpf\/lace"/);
  assert.match(c.fix, /kill 4242/);
});

Deno.test("evaluate() reports missing pins with the fix to start the agent", () => {
  const s = healthy();
  s.mapPinned = false;
  s.links = (s.links as { program: string }[]).map((l) => ({
    program: l.program,
    pinned: false,
    alive: false,
    cgroupId: 0n,
    progId: 0,
  }));
  const checks = evaluate(s);
  assert.deepEqual(
    failing(checks).filter((n) => n.startsWith("link") || n === "pinned-map"),
    ["pinned-map", "link-connect4", "link-connect6"],
  );
  assert.match(byName(checks, "link-connect4").fix, /start the agent/);
});

Deno.test("evaluate() explains a dead link as a recreated kubelet cgroup", () => {
  const s = healthy();
  (s.links as { alive: boolean; cgroupId: bigint }[])[0].alive = false;
  const c = byName(evaluate(s), "link-connect4");
  assert.equal(c.ok, false);
  assert.match(c.message, /dead.*cgroup it was attached to is gone/);
});

Deno.test("evaluate() names the cgroup a link is attached to when it is not the kubelet's", () => {
  const s = healthy();
  (s.links as { cgroupId: bigint }[])[1].cgroupId = 99n;
  const c = byName(evaluate(s), "link-connect6");
  assert.equal(c.ok, false);
  assert.match(c.message, /cgroup id 99 \("\/sys\/fs\/cgroup\/other"\), not to the kubelet cgroup/);
});

Deno.test("evaluate() says which object the node runs and that it is this lace's", () => {
  const c = byName(evaluate(healthy()), "program-version");
  assert.equal(c.ok, true);
  assert.equal(
    c.message,
    "the node runs BPF object sha256 abababababab (map layout ABI 2): this lace's object",
  );
});

Deno.test("evaluate() warns while maps of two layouts are pinned, and only then", () => {
  assert.equal(evaluate(healthy()).find((c) => c.name === "map-layouts"), undefined);
  const c = byName(evaluate({ ...healthy(), layouts: [2, 1] }), "map-layouts");
  assert.equal(c.ok, false);
  assert.equal(c.severity, "warning");
  assert.match(c.message, /maps of 2 layouts are pinned \(ABI 2, 1\): a migration is under way/);
});

Deno.test("evaluate() compares the node's layout with the one this lace's object declares", () => {
  const next = { ...healthy(), binaryAbi: 2, info: { abiVersion: 2, objectSha256: SHA } };
  assert.equal(byName(evaluate(next), "program-version").ok, true);
  const behind = { ...next, info: { abiVersion: 1, objectSha256: SHA } };
  assert.match(
    byName(evaluate(behind), "program-version").message,
    /map layout ABI 1\), not this lace's \(sha256 abababababab, map layout ABI 2\)/,
  );
});

Deno.test("evaluate() flags a pinned program from another build", () => {
  const c = byName(evaluate({ ...healthy(), binarySha256: "cd".repeat(32) }), "program-version");
  assert.equal(c.ok, false);
  assert.match(
    c.message,
    /node runs BPF object sha256 abababababab \(map layout ABI 2\), not this lace's \(sha256 cdcdcdcdcdcd, map layout ABI 2\)/,
  );
  const old = byName(
    evaluate({ ...healthy(), info: { abiVersion: ABI_VERSION + 1, objectSha256: SHA } }),
    "program-version",
  );
  assert.equal(old.ok, false);
  assert.match(old.message, /map layout ABI 3\), not this lace's/);
});

Deno.test("evaluate() reports a missing kubelet cgroup and a kubelet that runs elsewhere", () => {
  const s = healthy();
  s.kubeletCgroup = {
    configured: K,
    path: K,
    error: `kubelet cgroup "${K}" does not exist`,
    id: null,
  };
  s.kubelets = [{
    pid: 42,
    comm: "k3s-server",
    cgroupDir: "/sys/fs/cgroup/system.slice/k3s.service",
  }];
  const checks = evaluate(s);
  assert.equal(byName(checks, "kubelet-cgroup").ok, false);
  const k = byName(checks, "kubelet-process");
  assert.equal(k.ok, false);
  assert.match(k.message, /pid 42, k3s-server\) runs in cgroup ".*k3s\.service", not in/);
  assert.match(k.fix, /--kubelet-cgroup \/sys\/fs\/cgroup\/system\.slice\/k3s\.service/);
});

Deno.test("evaluate() accepts a kubelet in a child of the kubelet cgroup", () => {
  const s = healthy();
  s.kubelets = [{ pid: 1, comm: "kubelet", cgroupDir: `${K}/inner` }];
  assert.equal(byName(evaluate(s), "kubelet-process").ok, true);
});

Deno.test("evaluate() warns about extra processes without failing the run", () => {
  const s = { ...healthy(), extraProcesses: [{ pid: 9, comm: "containerd", cgroupDir: K }] };
  const c = byName(evaluate(s), "kubelet-cgroup-shared");
  assert.equal(c.ok, false);
  assert.equal(c.severity, "warning");
  assert.match(c.message, /9 \(containerd\)/);
});

Deno.test("evaluate() reports an agent that is down, and one that is not ready with its reasons", () => {
  const down = healthy();
  down.agent = { ...down.agent, healthz: null, readyz: null, error: "no agent answers" };
  const checks = evaluate(down);
  assert.equal(byName(checks, "agent-health").ok, false);
  assert.match(byName(checks, "agent-health").message, /no agent answers/);
  assert.equal(checks.find((c) => c.name === "agent-ready"), undefined);
  const unready = healthy();
  unready.agent.readyz = { status: 503, body: "not ready: first pod list not applied yet\n" };
  const c = byName(evaluate(unready), "agent-ready");
  assert.equal(c.ok, false);
  assert.match(c.message, /first pod list not applied yet/);
});

Deno.test("evaluate() warns when the map and the agent disagree or nothing is tagged", () => {
  const s = healthy();
  s.mapEntries = 3;
  s.counters = { connect4Seen: 0n, connect6Seen: 0n, setsockoptFailed: 0n };
  const checks = evaluate(s);
  assert.match(byName(checks, "probe-targets").message, /3 probe targets in the map, 1 known/);
  assert.equal(byName(checks, "probe-targets").severity, "warning");
  assert.equal(byName(checks, "tagged-connects").ok, false);
  assert.match(
    byName(checks, "tagged-connects").message,
    /^0 of 0 connects from the kubelet cgroup tagged/,
  );
});

Deno.test("evaluate() warns about kubelet lookalikes with the reason each is not trusted", () => {
  const s = healthy();
  s.otherKubelets = [{
    pid: 66,
    comm: "kubelet",
    cgroup: "/kubepods/besteffort/pod1/abc",
    reason: 'it runs in a pod cgroup "/kubepods/besteffort/pod1/abc"',
  }];
  const checks = evaluate(s);
  const c = byName(checks, "kubelet-lookalikes");
  assert.equal(c.severity, "warning");
  assert.match(c.message, /66 \(kubelet\): it runs in a pod cgroup/);
  assert.equal(byName(checks, "kubelet-process").ok, true, "the real kubelet still passes");
});

Deno.test("evaluate() counts the kubelet lookalikes beyond those listed", () => {
  const s = { ...healthy(), otherKubeletsNotListed: 5000 };
  const c = byName(evaluate(s), "kubelet-lookalikes");
  assert.equal(c.severity, "warning");
  assert.match(c.message, /and 5000 more not listed$/);
});

Deno.test("evaluate() names the API server processes that share the kubelet cgroup", () => {
  const s = healthy();
  s.apiServers = [{
    pid: 812,
    comm: "k3s-server",
    cgroupDir: K,
    what: "k3s server, which runs the API server in the kubelet's process",
  }];
  const c = byName(evaluate(s), "api-server-in-kubelet-cgroup");
  assert.equal(c.ok, false);
  assert.equal(c.severity, "warning");
  assert.match(c.message, /812 \(k3s-server: k3s server, which runs the API server/);
  assert.match(c.message, /pods\/proxy, services\/proxy/);
  assert.match(c.fix, /chain the lace CNI plugin, keep the admission policy on/);
  assert.equal(evaluate(healthy()).some((x) => x.name === "api-server-in-kubelet-cgroup"), false);
});

Deno.test("evaluate() fails on a pods directory others may write, with the agent's reason", () => {
  const problem = 'Pods directory "/srv/pods" is writable by group or others (mode 0777)';
  const refused = byName(
    evaluate({ ...healthy(), podsDir: { dir: "/srv/pods", problem } }),
    "pods-dir",
  );
  assert.equal(refused?.ok, false);
  assert.equal(refused?.message, problem);
  const fine = byName(
    evaluate({ ...healthy(), podsDir: { dir: "/srv/pods", problem: undefined } }),
    "pods-dir",
  );
  assert.equal(fine?.ok, true);
  assert.ok(
    !evaluate(healthy()).some((c) => c.name === "pods-dir"),
    "not checked without --pods-dir",
  );
});
