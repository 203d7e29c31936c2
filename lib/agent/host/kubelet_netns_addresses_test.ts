import assert from "node:assert/strict";
import { KubeletNetnsAddresses } from "./kubelet_netns_addresses.ts";
import type { KubeletProcessRef } from "./kubelet_netns_addresses.ts";
import type { HostAddressSource } from "../../agent_api/views.ts";
import type { ProcFiles } from "./pid_netns_read.ts";

const fib = (...addrs: string[]) =>
  "Local:\n  +-- 0.0.0.0/0 3 0 5\n" +
  addrs.map((a) => `     |-- ${a}\n        /32 host LOCAL\n`).join("") +
  "     |-- 127.0.0.1\n        /32 host LOCAL\n";

/** A fake /proc and cgroup: `pids` with their fib_trie text; ns/net one file unless `otherNetns`. */
function fakeNode(pids: Record<number, string>, otherNetns = false) {
  const clock = { ms: 0 };
  const root = Deno.makeTempDirSync({ prefix: "lace-hostns-" });
  const proc = `${root}/proc`, cg = `${root}/cg`;
  Deno.mkdirSync(cg);
  Deno.writeTextFileSync(`${root}/netns`, "");
  Deno.writeTextFileSync(`${root}/other-netns`, "");
  const addPid = (pid: number | "self", text?: string) => {
    Deno.mkdirSync(`${proc}/${pid}/net`, { recursive: true });
    Deno.mkdirSync(`${proc}/${pid}/ns`, { recursive: true });
    Deno.symlinkSync(
      pid !== "self" && otherNetns ? `${root}/other-netns` : `${root}/netns`,
      `${proc}/${pid}/ns/net`,
    );
    if (text !== undefined) {
      Deno.writeTextFileSync(`${proc}/${pid}/net/fib_trie`, text);
      Deno.writeTextFileSync(
        `${proc}/${pid}/net/if_inet6`,
        "fd990000000000000000000000000001 03 40 00 82       d0\n" +
          "00000000000000000000000000000001 01 80 10 80       lo\n",
      );
    }
  };
  addPid("self");
  for (const [pid, text] of Object.entries(pids)) addPid(Number(pid), text);
  const setProcs = (...p: number[]) => Deno.writeTextFileSync(`${cg}/cgroup.procs`, p.join("\n"));
  setProcs(...Object.keys(pids).map(Number));
  const changes: HostAddressSource[] = [];
  const reader = new KubeletNetnsAddresses({
    cgroupPath: () => cg,
    procRoot: proc,
    ownAddresses: () => new Set(["10.0.0.99"]),
    onChange: (s) => changes.push(s),
    now: () => clock.ms,
    ttlMs: 1000,
  });
  return {
    clock,
    proc,
    reader,
    changes,
    setProcs,
    addPid,
    [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }),
  };
}

Deno.test("KubeletNetnsAddresses reads the kubelet process's namespace, not the agent's own", () => {
  using n = fakeNode({ 10: fib("10.99.1.1", "10.99.1.7") });
  assert.deepEqual([...n.reader.read()].sort(), ["10.99.1.1", "10.99.1.7", "fd99::1"]);
  assert.deepEqual(n.reader.status(), { source: "kubelet-netns", pid: 10, otherNetns: false });
});

Deno.test("KubeletNetnsAddresses finds another process of the cgroup when the one it read is gone", () => {
  using n = fakeNode({ 10: fib("10.99.1.1"), 11: fib("10.99.1.2") });
  n.reader.read();
  assert.equal(n.reader.status().pid, 10);
  n.setProcs(11); // within the TTL: a pid gone is never answered from the cache
  assert.deepEqual([...n.reader.read()].sort(), ["10.99.1.2", "fd99::1"]);
  assert.equal(n.reader.status().pid, 11);
  // Listed but its /proc gone (exited between the two reads): the next one is read.
  n.setProcs(12, 11);
  assert.equal(n.reader.read().has("10.99.1.2"), true);
  assert.equal(n.reader.status().source, "kubelet-netns");
});

Deno.test("KubeletNetnsAddresses fails closed on an empty cgroup: the last set read and the agent's own, said once", () => {
  using n = fakeNode({ 10: fib("10.99.1.1") });
  n.reader.read();
  n.setProcs();
  const got = n.reader.read();
  assert.deepEqual([...got].sort(), ["10.0.0.99", "10.99.1.1", "fd99::1"]);
  const s = n.reader.status();
  assert.equal(s.source, "fallback");
  assert.match(s.error ?? "", /no process in the kubelet cgroup/);
  n.reader.read();
  assert.deepEqual(n.changes.map((c) => c.source), ["kubelet-netns", "fallback"]);
  // Back when a process is there again.
  n.setProcs(10);
  assert.equal(n.reader.read().has("10.0.0.99"), false);
  assert.equal(n.reader.status().source, "kubelet-netns");
});

Deno.test("KubeletNetnsAddresses fails closed on text it cannot parse, naming it", () => {
  using n = fakeNode({ 10: "garbage\n" });
  assert.deepEqual([...n.reader.read()], ["10.0.0.99"]);
  assert.match(n.reader.status().error ?? "", /fib_trie line 1/);
  assert.deepEqual(n.changes.map((c) => c.source), ["fallback"]);
});

Deno.test("KubeletNetnsAddresses names a kubelet in another network namespace than the agent", () => {
  using n = fakeNode({ 10: fib("10.99.1.1") }, true);
  assert.ok(n.reader.read().has("10.99.1.1"));
  assert.equal(n.reader.status().otherNetns, true);
});

Deno.test("KubeletNetnsAddresses answers from one pid's read for the TTL, then reads again", () => {
  using n = fakeNode({ 10: fib("10.99.1.1") });
  n.reader.read();
  Deno.writeTextFileSync(`${n.proc}/10/net/fib_trie`, fib("10.99.1.1", "10.99.1.2"));
  n.clock.ms = 999;
  assert.equal(n.reader.read().has("10.99.1.2"), false);
  n.clock.ms = 1000;
  assert.equal(n.reader.read().has("10.99.1.2"), true);
});

const HOST_NETNS = "net:[4026531840]", POD_NETNS = "net:[4026532999]";

/**
 * A /proc and kubelet cgroup in memory: `proc(pid, netns, ...addresses)` makes a process (in
 * cgroup `cgroup` as its /proc/<pid>/cgroup shows), `procs(...)` lists the cgroup,
 * `childProcs(...)` a cgroup below it, and `before(path, fn)` changes the world once, right
 * before `path` is read (a pid changing hands in the middle of a read).
 */
function memoryNode(kubelet: () => KubeletProcessRef | null = () => null) {
  const text = new Map<string, string>(), links = new Map<string, string>();
  const hooks = new Map<string, () => void>();
  const reads: string[] = [];
  const hook = (path: string) => {
    reads.push(path);
    const fn = hooks.get(path);
    hooks.delete(path);
    fn?.();
  };
  const files: ProcFiles = {
    readText(path) {
      hook(path);
      const t = text.get(path);
      if (t === undefined) throw new Deno.errors.NotFound(path);
      return t;
    },
    readLink(path) {
      hook(path);
      const l = links.get(path);
      if (l === undefined) throw new Deno.errors.NotFound(path);
      return l;
    },
  };
  const proc = (
    pid: number | "self",
    netns: string,
    ...addresses: string[]
  ) => {
    links.set(`/proc/${pid}/ns/net`, netns);
    text.set(`/proc/${pid}/net/fib_trie`, fib(...addresses));
    text.set(`/proc/${pid}/net/if_inet6`, "");
  };
  const inCgroup = (pid: number, cgroup: string) =>
    text.set(`/proc/${pid}/cgroup`, `0::${cgroup}\n`);
  const procs = (...pids: number[]) => text.set("/cg/cgroup.procs", pids.join("\n"));
  const childProcs = (...pids: number[]) => text.set("/cg/pods/cgroup.procs", pids.join("\n"));
  proc("self", HOST_NETNS);
  procs();
  const changes: HostAddressSource[] = [];
  const reader = new KubeletNetnsAddresses({
    cgroupPath: () => "/cg",
    kubelet,
    files,
    ownAddresses: () => new Set(["10.0.0.99"]),
    onChange: (s) => changes.push(s),
    now: () => 0,
  });
  return {
    reader,
    changes,
    reads,
    proc,
    procs,
    childProcs,
    inCgroup,
    before: (path: string, fn: () => void) => hooks.set(path, fn),
  };
}

Deno.test("KubeletNetnsAddresses discards a read during which the process went into another namespace", () => {
  const n = memoryNode();
  n.proc(10, HOST_NETNS, "10.99.1.1");
  n.proc(11, HOST_NETNS, "10.99.1.1");
  n.procs(10, 11);
  // Process 10, still in the kubelet cgroup, enters a pod's namespace after its link was read.
  n.before("/proc/10/net/fib_trie", () => n.proc(10, POD_NETNS, "10.244.1.10"));
  assert.deepEqual([...n.reader.read({ fresh: true })], ["10.99.1.1"]);
  assert.deepEqual(n.reader.status(), { source: "kubelet-netns", pid: 11, otherNetns: false });
});

Deno.test("KubeletNetnsAddresses discards a read of a pid no longer in the kubelet cgroup afterwards, though its namespace did not change during the read", () => {
  const n = memoryNode();
  n.proc(10, HOST_NETNS, "10.99.1.1");
  n.proc(11, HOST_NETNS, "10.99.1.1");
  n.procs(10, 11);
  // The number changed hands between the cgroup's list and the first look at the process.
  n.before("/proc/10/ns/net", () => {
    n.proc(10, POD_NETNS, "10.244.1.10");
    n.procs(11);
  });
  assert.deepEqual([...n.reader.read({ fresh: true })], ["10.99.1.1"]);
  assert.equal(n.reader.status().pid, 11);
});

Deno.test("KubeletNetnsAddresses fails closed when every read is discarded: the last set and the agent's own, said and counted", () => {
  const n = memoryNode();
  n.proc(10, HOST_NETNS, "10.99.1.1");
  n.procs(10);
  n.reader.read();
  n.before("/proc/10/ns/net", () => {
    n.proc(10, POD_NETNS, "10.244.1.10");
    n.procs();
  });
  assert.deepEqual([...n.reader.read({ fresh: true })].sort(), ["10.0.0.99", "10.99.1.1"]);
  const s = n.reader.status();
  assert.equal(s.source, "fallback");
  assert.match(s.error ?? "", /process 10 left the kubelet cgroup .*read discarded/);
  assert.deepEqual(n.changes.map((c) => c.source), ["kubelet-netns", "fallback"]);
});

Deno.test("KubeletNetnsAddresses reads the kubelet's own process first, and no process of its cgroup in another namespace than the kubelet's", () => {
  let kubelet: number | null = 10;
  const n = memoryNode(() => kubelet === null ? null : { pid: kubelet, cgroup: null });
  // A helper of the kubelet cgroup that entered a pod's namespace is listed first.
  n.proc(5, POD_NETNS, "10.244.1.10");
  n.proc(10, HOST_NETNS, "10.99.1.1");
  n.procs(5, 10);
  assert.deepEqual([...n.reader.read()], ["10.99.1.1"]);
  assert.equal(n.reader.status().pid, 10);
  assert.ok(!n.reads.includes("/proc/5/net/fib_trie"));
  // The kubelet restarts: its new process is not listed yet; the helper is not read instead.
  kubelet = 12;
  n.procs(5);
  assert.deepEqual([...n.reader.read({ fresh: true })].sort(), ["10.0.0.99", "10.99.1.1"]);
  assert.match(n.reader.status().error ?? "", /process 5 .* not the kubelet's/);
  // The new kubelet is listed: read again.
  n.proc(12, HOST_NETNS, "10.99.1.1", "10.99.1.2");
  n.procs(5, 12);
  assert.deepEqual([...n.reader.read()].sort(), ["10.99.1.1", "10.99.1.2"]);
  assert.equal(n.reader.status().pid, 12);
});

Deno.test("KubeletNetnsAddresses reads past its cache when asked for a fresh read", () => {
  const n = memoryNode();
  n.proc(10, HOST_NETNS, "10.99.1.1");
  n.procs(10);
  n.reader.read();
  n.proc(10, HOST_NETNS, "10.99.1.1", "10.99.1.2");
  assert.equal(n.reader.read().has("10.99.1.2"), false, "within the TTL");
  assert.equal(n.reader.read({ fresh: true }).has("10.99.1.2"), true);
});

Deno.test("KubeletNetnsAddresses never reads a process of a cgroup below the kubelet cgroup: with none of its own and no kubelet known, it fails closed", () => {
  const n = memoryNode();
  n.proc(10, HOST_NETNS, "10.99.1.1");
  n.procs(10);
  n.reader.read();
  // The kubelet cgroup is left with no process; below it, a pod's process in the pod's namespace.
  n.procs();
  n.proc(20, POD_NETNS, "10.244.1.10");
  n.childProcs(20);
  const got = n.reader.read({ fresh: true });
  assert.deepEqual([...got].sort(), ["10.0.0.99", "10.99.1.1"], "the last set and the agent's own");
  assert.ok(!n.reads.some((p) => p.startsWith("/proc/20/")), n.reads.join(" "));
  const s = n.reader.status();
  assert.equal(s.source, "fallback");
  assert.match(
    s.error ?? "",
    /no process in the kubelet cgroup itself and the kubelet's own not found yet .*never read/,
  );
  assert.deepEqual(n.changes.map((c) => c.source), ["kubelet-netns", "fallback"]);
});

Deno.test("KubeletNetnsAddresses reads the kubelet's own process in a cgroup below while it shows the cgroup it was found in, and not once its pid changed hands", () => {
  const cgroup = "/kubelet.slice/kubelet.service";
  const pod = "/kubepods.slice/kubepods-pod1.slice/cri-containerd-1.scope";
  const n = memoryNode(() => ({ pid: 30, cgroup }));
  const kubelet = () => {
    n.proc(30, HOST_NETNS, "10.99.1.1");
    n.inCgroup(30, cgroup);
  };
  const podProcessAt30 = () => {
    n.proc(30, POD_NETNS, "10.244.1.10");
    n.inCgroup(30, pod);
  };
  kubelet();
  n.proc(20, POD_NETNS, "10.244.1.10");
  n.childProcs(20);
  // The kubelet exits between the check of its cgroup and the read, its number going to a
  // pod's process: the namespace does not change during the read, its cgroup does.
  n.before("/proc/30/ns/net", podProcessAt30);
  assert.deepEqual([...n.reader.read()], ["10.0.0.99"]);
  assert.match(n.reader.status().error ?? "", /process 30 left the kubelet cgroup .*discarded/);
  kubelet();
  assert.deepEqual([...n.reader.read({ fresh: true })], ["10.99.1.1"]);
  assert.deepEqual(n.reader.status(), { source: "kubelet-netns", pid: 30, otherNetns: false });
  // Its number is a pod's now: not read, and the pod's process below is not read instead.
  podProcessAt30();
  const reads = n.reads.length;
  assert.deepEqual([...n.reader.read({ fresh: true })].sort(), ["10.0.0.99", "10.99.1.1"]);
  assert.match(n.reader.status().error ?? "", /process 30 is no longer the kubelet/);
  assert.ok(!n.reads.slice(reads).some((p) => p.startsWith("/proc/30/net")), n.reads.join(" "));
  assert.ok(!n.reads.some((p) => p.startsWith("/proc/20/")), n.reads.join(" "));
});

Deno.test("KubeletNetnsAddresses never reads /proc/0: a kubelet cgroup whose processes are all in another pid namespace is named as that", () => {
  using n = fakeNode({ 10: fib("10.99.1.1") });
  // What cgroup.procs shows an agent outside the kubelet's pid namespace: a 0 per process. A
  // /proc/0 that could be read (here the kubelet's own files) must not be.
  n.addPid(0, fib("10.66.6.6"));
  n.setProcs(0, 0);
  const got = n.reader.read();
  assert.equal(got.has("10.66.6.6"), false);
  assert.deepEqual([...got].sort(), ["10.0.0.99"]);
  const s = n.reader.status();
  assert.equal(s.source, "fallback");
  assert.match(
    s.error ?? "",
    /the kubelet cgroup's 2 process\(es\) are in another pid namespace than this agent's \(cgroup\.procs lists them as 0\): run the agent in the host's pid namespace \(hostPID: true/,
  );
  // A visible process beside the hidden ones is read as ever.
  n.setProcs(0, 10);
  assert.deepEqual([...n.reader.read()].sort(), ["10.99.1.1", "fd99::1"]);
  assert.equal(n.reader.status().pid, 10);
});

Deno.test("KubeletNetnsAddresses's fallback reads the agent's own addresses once per TTL, or when asked fresh", () => {
  const clock = { ms: 0 };
  let reads = 0;
  const reader = new KubeletNetnsAddresses({
    cgroupPath: () => null,
    ownAddresses: () => {
      reads++;
      return new Set([`10.0.0.${reads}`]);
    },
    now: () => clock.ms,
    ttlMs: 1000,
  });
  assert.deepEqual([...reader.read()], ["10.0.0.1"]);
  clock.ms = 999;
  assert.deepEqual([...reader.read()], ["10.0.0.1"]);
  assert.equal(reads, 1);
  // The periodic check asks for a fresh read: an address the node gained counts at once.
  assert.deepEqual([...reader.read({ fresh: true })], ["10.0.0.2"]);
  clock.ms = 2000;
  assert.deepEqual([...reader.read()], ["10.0.0.3"]);
  assert.equal(reader.status().source, "fallback");
});
