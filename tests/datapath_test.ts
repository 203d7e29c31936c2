/**
 * The probe datapath on the real kernel: a simulated node whose two overlay
 * networks hold pods with the same addresses, reached from the kubelet cgroup
 * only through the mark the connect programs set.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { defaultConfig } from "../lib/config.ts";
import { markFor } from "../lib/probe/key.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { statCgroupId } from "../lib/os/cgroupfs.ts";
import { linkPinName, uninstall } from "../lib/datapath/pins.ts";
import { BpfLink, BpfMap, cString, libbpfSymbols, unwrap } from "../lib/libbpf/mod.ts";
import { cgroup2MountPoints, readMountInfo } from "../lib/os/mountinfo.ts";
import { randomSuffix } from "../lib/os/process.ts";
import {
  HTTP_PORTS,
  POD_IPV4,
  POD_IPV6,
  privilegedTests,
  SimWorld,
  TCP_PORTS,
  testPinPath,
} from "./helpers/sim_world.ts";
import { waitFor } from "./helpers/wait.ts";

const privileged = privilegedTests();
const MARK_1 = markFor(defaultConfig(), 1);
const MARK_2 = markFor(defaultConfig(), 2);
const TIMEOUT = 3000;
const ipv4 = (port: number) => ({ family: "ipv4" as const, address: POD_IPV4, port });
const ipv6 = (port: number) => ({ family: "ipv6" as const, address: POD_IPV6, port });

privileged(
  "a kubelet IPv4 connect reaches the pod of the network its port is registered for",
  async () => {
    await using w = await SimWorld.create();
    w.register(ipv4(HTTP_PORTS[0]), 1);
    w.register(ipv4(HTTP_PORTS[1]), 2);
    const a = await w.kubelet.probe({
      host: POD_IPV4,
      port: HTTP_PORTS[0],
      timeoutMs: TIMEOUT,
      http: "/healthz",
    });
    const b = await w.kubelet.probe({
      host: POD_IPV4,
      port: HTTP_PORTS[1],
      timeoutMs: TIMEOUT,
      http: "/healthz",
    });
    assert.deepEqual(a, { result: "reached", httpStatus: 200, body: "pod-net1", mark: MARK_1 });
    assert.deepEqual(b, { result: "reached", httpStatus: 200, body: "pod-net2", mark: MARK_2 });
  },
);

privileged(
  "a kubelet IPv6 connect reaches the pod of the network its port is registered for",
  async () => {
    await using w = await SimWorld.create();
    w.register(ipv6(TCP_PORTS[0]), 2);
    w.register(ipv6(TCP_PORTS[1]), 1);
    const a = await w.kubelet.probe({ host: POD_IPV6, port: TCP_PORTS[0], timeoutMs: TIMEOUT });
    const b = await w.kubelet.probe({ host: POD_IPV6, port: TCP_PORTS[1], timeoutMs: TIMEOUT });
    assert.deepEqual(a, { result: "reached", body: "pod-net2", mark: MARK_2 });
    assert.deepEqual(b, { result: "reached", body: "pod-net1", mark: MARK_1 });
  },
);

privileged(
  "an IPv4-mapped connect on an AF_INET6 socket is tagged like the IPv4 target",
  async () => {
    await using w = await SimWorld.create();
    w.register(ipv4(TCP_PORTS[0]), 1);
    w.register(ipv4(TCP_PORTS[1]), 2);
    const host = `::ffff:${POD_IPV4}`;
    const a = await w.kubelet.probe({ host, port: TCP_PORTS[0], timeoutMs: TIMEOUT });
    const b = await w.kubelet.probe({ host, port: TCP_PORTS[1], timeoutMs: TIMEOUT });
    assert.deepEqual(a, { result: "reached", body: "pod-net1", mark: MARK_1 });
    assert.deepEqual(b, { result: "reached", body: "pod-net2", mark: MARK_2 });
  },
);

privileged("a connect to an unregistered port is not tagged and reaches no pod", async () => {
  await using w = await SimWorld.create();
  w.register(ipv4(HTTP_PORTS[0]), 1);
  w.register(ipv6(HTTP_PORTS[0]), 1);
  for (const host of [POD_IPV4, POD_IPV6, `::ffff:${POD_IPV4}`]) {
    const r = await w.kubelet.probe({ host, port: HTTP_PORTS[2], timeoutMs: TIMEOUT, http: "/" });
    assert.deepEqual(r, { result: "NO_ROUTE", mark: 0 }, host);
  }
});

privileged(
  "a process outside the kubelet cgroup is never tagged, even to a registered target",
  async () => {
    await using w = await SimWorld.create();
    w.register(ipv4(HTTP_PORTS[0]), 1);
    w.register(ipv6(HTTP_PORTS[0]), 2);
    for (const host of [POD_IPV4, POD_IPV6]) {
      const r = await w.other.probe({ host, port: HTTP_PORTS[0], timeoutMs: TIMEOUT, http: "/" });
      assert.deepEqual(r, { result: "NO_ROUTE", mark: 0 }, host);
    }
    // The same target from the kubelet cgroup is tagged: the difference is the cgroup.
    const k = await w.kubelet.probe({
      host: POD_IPV4,
      port: HTTP_PORTS[0],
      timeoutMs: TIMEOUT,
      http: "/",
    });
    assert.equal(k.mark, MARK_1);
  },
);

privileged("removing an entry stops the tagging", async () => {
  await using w = await SimWorld.create();
  w.register(ipv4(TCP_PORTS[0]), 1);
  const before = await w.kubelet.probe({ host: POD_IPV4, port: TCP_PORTS[0], timeoutMs: TIMEOUT });
  assert.equal(before.body, "pod-net1");
  w.datapath.store.remove(ipv4(TCP_PORTS[0]));
  assert.deepEqual(w.datapath.store.entries(), []);
  const after = await w.kubelet.probe({ host: POD_IPV4, port: TCP_PORTS[0], timeoutMs: TIMEOUT });
  assert.deepEqual(after, { result: "NO_ROUTE", mark: 0 });
});

privileged("the counters count connects seen and tagged per family", async () => {
  await using w = await SimWorld.create();
  w.register(ipv4(TCP_PORTS[0]), 1);
  w.register(ipv6(TCP_PORTS[0]), 1);
  const start = w.datapath.counters();
  await w.kubelet.probe({ host: POD_IPV4, port: TCP_PORTS[0], timeoutMs: TIMEOUT });
  await w.kubelet.probe({ host: POD_IPV4, port: TCP_PORTS[2], timeoutMs: TIMEOUT });
  await w.kubelet.probe({ host: POD_IPV6, port: TCP_PORTS[0], timeoutMs: TIMEOUT });
  await w.other.probe({ host: POD_IPV6, port: TCP_PORTS[0], timeoutMs: TIMEOUT });
  const end = w.datapath.counters();
  assert.equal(end.connect4Seen - start.connect4Seen, 2n);
  assert.equal(end.connect4Tagged - start.connect4Tagged, 1n);
  assert.equal(end.connect6Seen - start.connect6Seen, 1n);
  assert.equal(end.connect6Tagged - start.connect6Tagged, 1n);
  assert.equal(end.setsockoptFailed, 0n);
});

privileged(
  "pinned map and links keep tagging with no agent running, and a restart reuses them",
  async () => {
    await using w = await SimWorld.create();
    w.register(ipv4(HTTP_PORTS[0]), 2);
    const linksBefore = w.datapath.links();
    w.datapath.close();
    const meanwhile = await w.kubelet.probe({
      host: POD_IPV4,
      port: HTTP_PORTS[0],
      timeoutMs: TIMEOUT,
      http: "/",
    });
    assert.equal(meanwhile.body, "pod-net2");
    assert.equal(meanwhile.mark, MARK_2);

    w.datapath = Datapath.open({ pinPath: w.pinPath });
    assert.deepEqual(w.datapath.store.entries(), [
      { key: ipv4(HTTP_PORTS[0]), value: { networkId: 2, mark: MARK_2 } },
    ]);
    const result = w.datapath.attach(w.cgroups.kubelet);
    assert.deepEqual(result.created, []);
    assert.deepEqual(result.updated, ["connect4", "connect6"]);
    const linksAfter = w.datapath.links();
    assert.deepEqual(linksAfter.map((l) => l.linkId), linksBefore.map((l) => l.linkId));
    assert(linksAfter.every((l) => l.alive && l.current));
  },
);

privileged("replacing the program through the pinned link keeps tagging", async () => {
  await using w = await SimWorld.create();
  w.register(ipv4(TCP_PORTS[1]), 1);
  const before = w.datapath.links();
  using next = Datapath.open({ pinPath: w.pinPath });
  next.attach(w.cgroups.kubelet);
  const after = next.links();
  for (const [i, l] of after.entries()) {
    assert.equal(l.linkId, before[i].linkId);
    assert.notEqual(l.progId, before[i].progId);
    assert(l.current && l.alive);
  }
  assert(w.datapath.links().every((l) => !l.current));
  const r = await w.kubelet.probe({ host: POD_IPV4, port: TCP_PORTS[1], timeoutMs: TIMEOUT });
  assert.deepEqual(r, { result: "reached", body: "pod-net1", mark: MARK_1 });
  assert.equal(next.counters().connect4Tagged >= 1n, true);
});

privileged(
  "a link whose cgroup is gone is replaced by a new link on the current cgroup",
  async () => {
    const pinPath = testPinPath();
    const mount = cgroup2MountPoints(readMountInfo())[0];
    const gone = `${mount}/lace-test-gone-${randomSuffix()}`;
    const kept = `${gone}-next`;
    Deno.mkdirSync(gone);
    Deno.mkdirSync(kept);
    try {
      using dp = Datapath.open({ pinPath });
      dp.attach(gone);
      const old = dp.links();
      Deno.removeSync(gone);
      await waitFor(() => dp.links().every((l) => !l.alive), {
        timeout: 10_000,
        message: "the links to lose their removed cgroup",
      });
      const result = dp.attach(kept);
      assert.deepEqual(result.created, ["connect4", "connect6"]);
      const now = dp.links();
      assert(
        now.every((l, i) =>
          l.alive && l.cgroupId === statCgroupId(kept) && l.linkId !== old[i].linkId
        ),
      );
    } finally {
      uninstall(pinPath);
      for (const d of [gone, kept]) {
        try {
          Deno.removeSync(d);
        } catch { /* already gone */ }
      }
    }
  },
);

Deno.test("Datapath.open() on a directory that is not bpffs says how to mount bpffs", () => {
  const dir = Deno.makeTempDirSync();
  try {
    assert.throws(
      () => Datapath.open({ pinPath: `${dir}/lace` }),
      /not on a BPF filesystem.*mount -t bpf -o mode=0700 bpf \/sys\/fs\/bpf/,
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

privileged("attach() to a missing cgroup or a non-cgroup-v2 directory fails clearly", () => {
  const pinPath = testPinPath();
  const dir = Deno.makeTempDirSync();
  try {
    using dp = Datapath.open({ pinPath });
    assert.throws(() => dp.attach(`${dir}/missing`), /Cgroup ".*\/missing" does not exist/);
    assert.throws(() => dp.attach(dir), /is not a cgroup v2 directory \(it is on .*cgroup2 mount/);
    assert.deepEqual(dp.links().map((l) => l.pinned), [false, false]);
  } finally {
    uninstall(pinPath);
    Deno.removeSync(dir, { recursive: true });
  }
});

privileged("a map pinned where a link belongs is refused by name, not used as a link", () => {
  const pinPath = testPinPath();
  const cgroup = `${cgroup2MountPoints(readMountInfo())[0]}/lace-test-kind-${randomSuffix()}`;
  Deno.mkdirSync(cgroup);
  try {
    using dp = Datapath.open({ pinPath });
    using counters = BpfMap.openPinned(join(dp.layoutDir, "counters"));
    const linkPin = join(pinPath, linkPinName("connect4"));
    unwrap("bpf_obj_pin", libbpfSymbols().bpf_obj_pin(counters.fd, cString(linkPin)));
    const refused = /The pin ".*\/link_connect4" holds a BPF map, not a link: .*remove that pin/;
    assert.throws(() => BpfLink.openPinned(linkPin), refused);
    assert.throws(() => dp.attach(cgroup), refused);
    assert.throws(() => dp.links(), refused);
  } finally {
    uninstall(pinPath);
    Deno.removeSync(cgroup);
  }
});

privileged("a link pinned where a map belongs is refused by name, not read as a map", () => {
  const pinPath = testPinPath();
  const cgroup = `${cgroup2MountPoints(readMountInfo())[0]}/lace-test-kind-${randomSuffix()}`;
  Deno.mkdirSync(cgroup);
  try {
    using dp = Datapath.open({ pinPath });
    dp.attach(cgroup);
    const link = join(pinPath, linkPinName("connect4"));
    assert.throws(
      () => BpfMap.openPinned(link),
      /The pin ".*\/link_connect4" holds a BPF link, not a map/,
    );
  } finally {
    uninstall(pinPath);
    Deno.removeSync(cgroup);
  }
});

privileged("a missing libbpf is reported with how to install it", async () => {
  const pinPath = testPinPath();
  const code = `import { Datapath } from ${
    JSON.stringify(new URL("../lib/datapath/loader.ts", import.meta.url).href)
  };
    Datapath.open({ pinPath: ${JSON.stringify(pinPath)} });`;
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", code],
      cwd: new URL("..", import.meta.url).pathname,
      env: { LACE_LIBBPF: "/nonexistent/libbpf.so.1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.success, false);
    assert.match(stderr, /Cannot load libbpf from "\/nonexistent\/libbpf.so.1": install libbpf1/);
  } finally {
    uninstall(pinPath);
  }
});
