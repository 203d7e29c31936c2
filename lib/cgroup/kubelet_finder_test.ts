import assert from "node:assert/strict";
import {
  classifyProcess,
  extraProcesses,
  findKubelets,
  listCgroupProcesses,
  parseCmdline,
  parseProcCgroup,
} from "./kubelet_finder.ts";

interface FakeProcess {
  comm: string;
  argv: string[];
  cgroup?: string;
}

/** Writes a fixture /proc tree; kernel threads get an empty cmdline. */
function fakeProc(procs: Record<number, FakeProcess>): string {
  const root = Deno.makeTempDirSync({ prefix: "lace-proc-" });
  for (const [pid, p] of Object.entries(procs)) {
    Deno.mkdirSync(`${root}/${pid}`);
    Deno.writeTextFileSync(`${root}/${pid}/comm`, p.comm + "\n");
    Deno.writeTextFileSync(
      `${root}/${pid}/cmdline`,
      p.argv.length ? p.argv.join("\0") + "\0" : "",
    );
    Deno.writeTextFileSync(
      `${root}/${pid}/cgroup`,
      p.cgroup === undefined ? "" : `4:memory:/x\n1:cpu:/\n0::${p.cgroup}\n`,
    );
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
    const found = findKubelets(root);
    assert.equal(found.length, 1);
    assert.equal(found[0].pid, 812);
    assert.equal(found[0].kind, "kubelet");
    assert.equal(found[0].cgroup, "/system.slice/kubelet.service");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findKubelets() ranks a kubelet binary before k3s and ignores RKE2's supervisor", () => {
  const root = fakeProc({
    100: { comm: "rke2", argv: ["/usr/local/bin/rke2", "server"], cgroup: "/system.slice/r" },
    90: { comm: "k3s-server", argv: ["/usr/local/bin/k3s", "server"], cgroup: "/k3s" },
    150: { comm: "kubelet", argv: ["kubelet", "--v=2"], cgroup: "/system.slice/r" },
  });
  try {
    assert.deepEqual(findKubelets(root).map((k) => [k.pid, k.kind]), [[150, "kubelet"], [
      90,
      "k3s",
    ]]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findKubelets() returns nothing when no kubelet runs", () => {
  const root = fakeProc({ 1: { comm: "init", argv: ["/sbin/init"], cgroup: "/" } });
  try {
    assert.deepEqual(findKubelets(root), []);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("extraProcesses() lists the non-kubelet processes of a cgroup and its children", () => {
  const proc = fakeProc({
    10: { comm: "k3s-server", argv: ["k3s", "server"], cgroup: "/k3s.service" },
    11: { comm: "containerd", argv: ["containerd"], cgroup: "/k3s.service" },
    12: { comm: "containerd-shim", argv: ["containerd-shim-runc-v2"], cgroup: "/k3s.service/x" },
  });
  const cg = Deno.makeTempDirSync({ prefix: "lace-cg-" });
  try {
    Deno.writeTextFileSync(`${cg}/cgroup.procs`, "10\n11\n");
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
