import assert from "node:assert/strict";
import type { KubeletProcess } from "./kubelet_process.ts";
import { kubeletProcess } from "./_kubelet_process_fixture.ts";
import { containerCgroupReason, distrustReason, judgeKubelets } from "./kubelet_trust.ts";

const candidate = kubeletProcess;

Deno.test("containerCgroupReason() recognises the cgroups of pods and containers", () => {
  const cases: [string, RegExp | null][] = [
    // systemd driver: pod slices and runtime scopes
    [
      "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-ab.scope",
      /^pod cgroup/,
    ],
    ["/kubepods.slice/kubepods-pod7.slice", /^pod cgroup/],
    ["/system.slice/cri-containerd-0123abcd.scope", /^container cgroup/],
    ["/machine.slice/libpod-4f3a.scope/container", /^container cgroup/],
    ["/system.slice/crio-conmon-99.scope", /^container cgroup/],
    ["/system.slice/docker-5e1f.scope", /^container cgroup/],
    // cgroupfs driver: kubepods/<qos>/pod<uid>/<id>, docker/<id>
    ["/kubepods/burstable/pod6a1b/" + "a".repeat(64), /^pod cgroup/],
    ["/docker/" + "b".repeat(64), /^container cgroup/],
    ["/" + "c".repeat(64), /^container cgroup/],
    ["/lxc.payload.web/system.slice/kubelet.service", /^container cgroup/],
    // where kubelets really run
    ["/system.slice/kubelet.service", null],
    ["/system.slice/k3s.service", null],
    ["/podruntime/kubelet", null],
    ["/system.slice/containerd.service", null],
    ["/user.slice/user-0.slice/session-3.scope", null],
    ["/", null],
  ];
  for (const [cgroup, expected] of cases) {
    const reason = containerCgroupReason(cgroup);
    if (expected === null) assert.equal(reason, null, cgroup);
    else assert.match(reason ?? "", expected, cgroup);
  }
});

Deno.test("distrustReason() refuses containers, other mount namespaces and non-root users", () => {
  const cases: [KubeletProcess, RegExp | null][] = [
    [candidate(1, "/system.slice/kubelet.service"), null],
    [candidate(2, "/kubepods/besteffort/pod1/x"), /runs in a pod cgroup "\/kubepods/],
    [candidate(3, "/system.slice/docker-1.scope"), /runs in a container cgroup/],
    [candidate(4, "/k", { hostMountNamespace: false }), /mount namespace other than the host's/],
    [candidate(5, "/k", { hostMountNamespace: null }), /cannot be compared/],
    [candidate(6, "/k", { uid: 1000 }), /uid 1000, not as root/],
    [candidate(7, "/k", { uid: null }), /user cannot be read/],
    [candidate(8, null), /cgroup cannot be read/],
  ];
  for (const [k, expected] of cases) {
    const reason = distrustReason(k);
    if (expected === null) assert.equal(reason, null, `pid ${k.pid}`);
    else assert.match(reason ?? "", expected, `pid ${k.pid}`);
  }
});

Deno.test("judgeKubelets() puts the kubelet's unit first and lists the distrusted apart", () => {
  const { trusted, distrusted } = judgeKubelets([
    candidate(3, "/user.slice/user-0.slice/session-1.scope"),
    candidate(4, "/system.slice/other.service"),
    candidate(5, "/kubepods.slice/kubepods-pod1.slice/cri-containerd-1.scope"),
    candidate(900, "/system.slice/kubelet.service"),
    candidate(901, "/system.slice/k3s-agent.service", { kind: "k3s", comm: "k3s-agent" }),
    candidate(2, "/system.slice/kubelet.service", { uid: 1000 }),
  ]);
  assert.deepEqual(trusted.map((k) => k.pid), [900, 901, 4, 3]);
  assert.deepEqual(distrusted.map((k) => k.pid), [2, 5]);
  assert.match(distrusted[0].reason, /uid 1000/);
});

Deno.test("judgeKubelets() ranks a kubelet binary before k3s in the same kind of cgroup", () => {
  const { trusted } = judgeKubelets([
    candidate(90, "/system.slice/rke2-server.service", { kind: "k3s", comm: "k3s-server" }),
    candidate(150, "/system.slice/rke2-server.service"),
  ]);
  assert.deepEqual(trusted.map((k) => k.pid), [150, 90]);
});
