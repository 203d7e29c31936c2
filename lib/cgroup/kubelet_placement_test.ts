import assert from "node:assert/strict";
import { kubeletMismatch, otherKubelets, placeKubelets } from "./kubelet_placement.ts";
import { kubeletProcess } from "./_kubelet_process_fixture.ts";

const MOUNTS = [{ mountPoint: "/sys/fs/cgroup", root: "/", fsType: "cgroup2" }];
const K = "/sys/fs/cgroup/system.slice/kubelet.service";
const noIds = () => null;

Deno.test("placeKubelets() maps each kubelet's /proc cgroup onto the cgroup2 mount", () => {
  const [p] = placeKubelets([kubeletProcess(7, "/system.slice/kubelet.service")], MOUNTS, "");
  assert.equal(p.dir, K);
});

Deno.test("placeKubelets() keeps the raw cgroup when no cgroup2 mount reaches it", () => {
  const [p] = placeKubelets([kubeletProcess(7, "/system.slice/kubelet.service")], [], "");
  assert.equal(p.dir, "/system.slice/kubelet.service");
});

Deno.test("kubeletMismatch() is null while a kubelet runs in a child of the cgroup", () => {
  const placed = placeKubelets(
    [kubeletProcess(7, "/system.slice/kubelet.service/sub")],
    MOUNTS,
    "",
  );
  assert.equal(kubeletMismatch(K, placed, noIds), null);
});

Deno.test("kubeletMismatch() names the first kubelet when none runs in the cgroup", () => {
  const placed = placeKubelets([kubeletProcess(9, "/system.slice/k3s.service")], MOUNTS, "");
  assert.deepEqual(kubeletMismatch(K, placed, noIds), {
    kubeletPid: 9,
    kubeletComm: "kubelet",
    kubeletCgroup: "/sys/fs/cgroup/system.slice/k3s.service",
  });
});

Deno.test("kubeletMismatch() accepts a kubelet whose cgroup has the same id under another path", () => {
  const placed = placeKubelets([kubeletProcess(9, "/other/kubelet")], MOUNTS, "");
  assert.equal(kubeletMismatch(K, placed, () => 77n), null);
});

Deno.test("otherKubelets() lists distrusted processes and second kubelets but not the mismatch, by pid", () => {
  const placed = placeKubelets(
    [
      kubeletProcess(30, "/system.slice/a.service"),
      kubeletProcess(20, "/system.slice/b.service"),
    ],
    MOUNTS,
    "",
  );
  const mismatch = kubeletMismatch(K, placed, noIds);
  const distrusted = [{ pid: 25, comm: "kubelet", cgroup: "/kubepods/x", reason: "in a pod" }];
  const others = otherKubelets(K, placed, mismatch, distrusted);
  assert.deepEqual(others.map((o) => o.pid), [20, 25]);
  assert.match(others[0].reason, /a second kubelet outside the kubelet cgroup/);
});
