import assert from "node:assert/strict";
import {
  apiServerProcesses,
  classifyProcess,
  describeApiServer,
  extraProcesses,
  findKubelets,
  listCgroupProcesses,
  parseCgroupProcs,
  parseCmdline,
  parseMountIds,
  parseProcCgroup,
  sameMountNamespace,
} from "./kubelet_finder.ts";

interface FakeProcess {
  comm: string;
  argv: string[];
  cgroup?: string;
  /** Real and effective uid (default 0). */
  uid?: [number, number];
  /** The ns/mnt link target; absent means unreadable (no ptrace right), like PID 1 here. */
  mntLink?: string;
  /** Mount ids its mountinfo lists (default the host's, 20 and 21). */
  mountIds?: number[];
}

/** Writes a fixture /proc tree; kernel threads get an empty cmdline. */
function fakeProc(procs: Record<number, FakeProcess>): string {
  const root = Deno.makeTempDirSync({ prefix: "lace-proc-" });
  for (const [pid, p] of Object.entries(procs)) {
    Deno.mkdirSync(`${root}/${pid}/ns`, { recursive: true });
    Deno.writeTextFileSync(`${root}/${pid}/comm`, p.comm + "\n");
    Deno.writeTextFileSync(
      `${root}/${pid}/cmdline`,
      p.argv.length ? p.argv.join("\0") + "\0" : "",
    );
    Deno.writeTextFileSync(
      `${root}/${pid}/cgroup`,
      p.cgroup === undefined ? "" : `4:memory:/x\n1:cpu:/\n0::${p.cgroup}\n`,
    );
    const [real, effective] = p.uid ?? [0, 0];
    Deno.writeTextFileSync(
      `${root}/${pid}/status`,
      `Name:\t${p.comm}\nUid:\t${real}\t${effective}\t${effective}\t${effective}\nGid:\t0\t0\t0\t0\n`,
    );
    Deno.writeTextFileSync(
      `${root}/${pid}/mountinfo`,
      (p.mountIds ?? [20, 21]).map((id) => `${id} 1 0:21 / /m${id} rw - tmpfs tmpfs rw\n`)
        .join(""),
    );
    if (p.mntLink) Deno.symlinkSync(p.mntLink, `${root}/${pid}/ns/mnt`);
  }
  Deno.writeTextFileSync(`${root}/meminfo`, "not a process\n");
  return root;
}

Deno.test("classifyProcess() recognises a kubelet binary by its path or comm", () => {
  assert.equal(classifyProcess("kubelet", ["/usr/bin/kubelet", "--config=x"]), "kubelet");
  assert.equal(classifyProcess("kubelet", []), "kubelet");
  assert.equal(classifyProcess("hyperkube", ["hyperkube", "kubelet"]), "kubelet");
});

Deno.test("classifyProcess() recognises k3s server and agent but not other k3s commands", () => {
  assert.equal(classifyProcess("k3s-server", ["/usr/local/bin/k3s", "server"]), "k3s");
  assert.equal(classifyProcess("k3s-agent", ["/usr/local/bin/k3s agent"]), "k3s");
  assert.equal(classifyProcess("k3s", ["k3s", "kubectl", "get", "pods"]), null);
  assert.equal(classifyProcess("k3s-server", ["k3s", "server", "--disable-agent"]), null);
});

Deno.test("classifyProcess() recognises MicroK8s kubelite and not RKE2's supervisor", () => {
  assert.equal(classifyProcess("kubelite", ["/snap/microk8s/1/kubelite", "--x"]), "kubelite");
  assert.equal(classifyProcess("rke2", ["/usr/local/bin/rke2", "agent"]), null);
  assert.equal(classifyProcess("sleep", ["sleep", "kubelet"]), null);
});

Deno.test("parseProcCgroup() takes the v2 line of a hybrid host's cgroup file", () => {
  assert.equal(
    parseProcCgroup("9:name=systemd:/system.slice/k.service\n0::/system.slice/kubelet.service\n"),
    "/system.slice/kubelet.service",
  );
  assert.equal(parseProcCgroup("0::/\n"), "/");
  assert.equal(parseProcCgroup("4:memory:/a\n"), null);
});

Deno.test("parseCmdline() splits on NUL and drops the trailing empty part", () => {
  assert.deepEqual(parseCmdline("a\0b c\0"), ["a", "b c"]);
  assert.deepEqual(parseCmdline(""), []);
});

Deno.test("findKubelets() finds the kubelet and its cgroup in a /proc tree", () => {
  const root = fakeProc({
    1: { comm: "systemd", argv: ["/sbin/init"], cgroup: "/init.scope" },
    2: { comm: "kthreadd", argv: [] },
    812: { comm: "kubelet", argv: ["/usr/bin/kubelet"], cgroup: "/system.slice/kubelet.service" },
  });
  try {
    const { found } = findKubelets(root);
    assert.equal(found.length, 1);
    assert.equal(found[0].pid, 812);
    assert.equal(found[0].kind, "kubelet");
    assert.equal(found[0].cgroup, "/system.slice/kubelet.service");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findKubelets() lists k3s and the kubelet binary but not RKE2's supervisor", () => {
  const root = fakeProc({
    100: { comm: "rke2", argv: ["/usr/local/bin/rke2", "server"], cgroup: "/system.slice/r" },
    90: { comm: "k3s-server", argv: ["/usr/local/bin/k3s", "server"], cgroup: "/k3s" },
    150: { comm: "kubelet", argv: ["kubelet", "--v=2"], cgroup: "/system.slice/r" },
  });
  try {
    assert.deepEqual(findKubelets(root).found.map((k) => [k.pid, k.kind]), [[90, "k3s"], [
      150,
      "kubelet",
    ]]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findKubelets() reads each candidate's uid and whether it shares PID 1's mounts", () => {
  const root = fakeProc({
    1: { comm: "systemd", argv: ["/sbin/init"], cgroup: "/init.scope" },
    10: { comm: "kubelet", argv: ["kubelet"], cgroup: "/system.slice/kubelet.service" },
    11: { comm: "kubelet", argv: ["kubelet"], cgroup: "/user.slice", mountIds: [300, 301] },
    12: { comm: "kubelet", argv: ["kubelet"], cgroup: "/user.slice", uid: [1000, 1000] },
    13: { comm: "kubelet", argv: ["kubelet"], cgroup: "/user.slice", uid: [0, 1000] },
  });
  try {
    assert.deepEqual(
      findKubelets(root).found.map((k) => [k.pid, k.uid, k.hostMountNamespace]),
      [[10, 0, true], [11, 0, false], [12, 1000, true], [13, 1000, true]],
    );
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findKubelets() compares namespace links when both can be read", () => {
  const root = fakeProc({
    1: { comm: "systemd", argv: ["/sbin/init"], mntLink: "mnt:[4026531841]" },
    // The same mount ids as the host, yet another namespace: the links decide.
    10: { comm: "kubelet", argv: ["kubelet"], cgroup: "/k", mntLink: "mnt:[4026532200]" },
    11: { comm: "kubelet", argv: ["kubelet"], cgroup: "/k", mntLink: "mnt:[4026531841]" },
  });
  try {
    assert.deepEqual(findKubelets(root).found.map((k) => k.hostMountNamespace), [false, true]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findKubelets() returns nothing when no kubelet runs", () => {
  const root = fakeProc({ 1: { comm: "init", argv: ["/sbin/init"], cgroup: "/" } });
  try {
    assert.deepEqual(findKubelets(root), { found: [], lookalikesNotListed: 0 });
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("extraProcesses() lists the non-kubelet processes of a cgroup and its children", () => {
  const proc = fakeProc({
    10: { comm: "k3s-server", argv: ["k3s", "server"], cgroup: "/k3s.service" },
    11: { comm: "containerd", argv: ["containerd"], cgroup: "/k3s.service" },
    12: { comm: "containerd-shim", argv: ["containerd-shim-runc-v2"], cgroup: "/k3s.service/x" },
    // Never read: cgroup.procs's 0 is a process of another pid namespace, not this entry.
    0: { comm: "tenant", argv: ["tenant"], cgroup: "/k3s.service" },
  });
  const cg = Deno.makeTempDirSync({ prefix: "lace-cg-" });
  try {
    Deno.writeTextFileSync(`${cg}/cgroup.procs`, "0\n10\n11\n");
    Deno.mkdirSync(`${cg}/x`);
    Deno.writeTextFileSync(`${cg}/x/cgroup.procs`, "12\n");
    assert.equal(listCgroupProcesses(cg, { procRoot: proc }).length, 3);
    assert.deepEqual(listCgroupProcesses(cg, { procRoot: proc, recursive: false }).length, 2);
    const extra = extraProcesses(cg, { procRoot: proc });
    assert.deepEqual(extra.map((p) => [p.pid, p.comm, p.cgroupDir]), [
      [11, "containerd", cg],
      [12, "containerd-shim", `${cg}/x`],
    ]);
    assert.deepEqual(extraProcesses(cg, { procRoot: proc, exclude: [11, 12] }), []);
  } finally {
    Deno.removeSync(proc, { recursive: true });
    Deno.removeSync(cg, { recursive: true });
  }
});

Deno.test("sameMountNamespace() prefers links and falls back to shared mount ids", () => {
  const ids = (text: string) => parseMountIds(text);
  const host = { link: null, mountIds: ids("22 27 0:21 / /proc rw - proc proc rw\n48 1 x\n") };
  assert.deepEqual([...host.mountIds], [22, 48]);
  assert.equal(sameMountNamespace(host, { link: null, mountIds: new Set([48, 49]) }), true);
  assert.equal(sameMountNamespace(host, { link: null, mountIds: new Set([60]) }), false);
  assert.equal(sameMountNamespace(host, { link: "mnt:[1]", mountIds: null }), null);
  assert.equal(
    sameMountNamespace({ link: "mnt:[1]", mountIds: null }, { link: "mnt:[2]", mountIds: null }),
    false,
  );
});

Deno.test("describeApiServer() names kube-apiserver and the binaries that embed it", () => {
  assert.equal(describeApiServer("kube-apiserver", ["kube-apiserver", "--v=2"]), "kube-apiserver");
  assert.match(describeApiServer("k3s-server", ["/usr/local/bin/k3s", "server"]) ?? "", /^k3s/);
  assert.match(describeApiServer("kubelite", ["/snap/microk8s/1/kubelite"]) ?? "", /MicroK8s/);
  assert.equal(describeApiServer("k3s-agent", ["/usr/local/bin/k3s", "agent"]), null);
  assert.equal(describeApiServer("kubelet", ["/usr/bin/kubelet"]), null);
  assert.equal(describeApiServer("containerd", ["containerd"]), null);
});

Deno.test("apiServerProcesses() lists the API servers of a cgroup tree, the kubelet's own too", () => {
  const proc = fakeProc({
    10: { comm: "k3s-server", argv: ["k3s", "server"], cgroup: "/k3s.service" },
    11: { comm: "containerd", argv: ["containerd"], cgroup: "/k3s.service" },
  });
  const cg = Deno.makeTempDirSync({ prefix: "lace-cg-" });
  try {
    Deno.writeTextFileSync(`${cg}/cgroup.procs`, "10\n11\n");
    assert.deepEqual(apiServerProcesses(cg, proc).map((p) => [p.pid, p.comm]), [
      [10, "k3s-server"],
    ]);
  } finally {
    Deno.removeSync(proc, { recursive: true });
    Deno.removeSync(cg, { recursive: true });
  }
});

Deno.test("parseCgroupProcs() counts the 0s of another pid namespace apart from the pids", () => {
  assert.deepEqual(parseCgroupProcs("12\n0\n 7 \nx\n0\n\n"), { pids: [12, 7], hidden: 2 });
  assert.deepEqual(parseCgroupProcs(""), { pids: [], hidden: 0 });
});
