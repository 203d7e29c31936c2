import assert from "node:assert/strict";
import {
  cgroup2Mounts,
  CgroupPathError,
  joinPath,
  mapConfiguredCgroup,
  mapProcessCgroup,
  type MountPoint,
} from "./path.ts";
import { parseMountInfo as parseMountPoints } from "../os/mountinfo.ts";

const HYBRID = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 23 0:39 / /sys/fs/bpf rw,relatime - bpf bpf rw
`;
const UNIFIED: MountPoint[] = [
  { mountPoint: "/sys/fs/cgroup", root: "/", fsType: "cgroup2" },
  { mountPoint: "/sys/fs/bpf", root: "/", fsType: "bpf" },
];
/** A container with its own namespaced cgroup2 and the host's mounted under /host. */
const CONTAINER: MountPoint[] = [
  { mountPoint: "/sys/fs/cgroup", root: "/", fsType: "cgroup2" },
  { mountPoint: "/host/sys/fs/cgroup", root: "/", fsType: "cgroup2" },
];
const KUBELET = "/sys/fs/cgroup/system.slice/kubelet.service";

Deno.test("joinPath() normalises slashes and dot parts", () => {
  assert.equal(joinPath("/a//b/", "./c", "../d"), "/a/b/d");
  assert.equal(joinPath("/"), "/");
});

Deno.test("mapConfiguredCgroup() keeps a path that is on cgroup2", () => {
  assert.equal(mapConfiguredCgroup(KUBELET, UNIFIED), KUBELET);
});

Deno.test("mapConfiguredCgroup() moves the conventional path onto a hybrid host's unified mount", () => {
  const mounts = parseMountPoints(HYBRID);
  assert.equal(
    mapConfiguredCgroup(KUBELET, mounts),
    "/sys/fs/cgroup/unified/system.slice/kubelet.service",
  );
  assert.equal(
    mapConfiguredCgroup("/sys/fs/cgroup/unified/kubepods", mounts),
    "/sys/fs/cgroup/unified/kubepods",
  );
});

Deno.test("mapConfiguredCgroup() puts the host root prefix in front of a host path", () => {
  assert.equal(mapConfiguredCgroup(KUBELET, CONTAINER, "/host"), `/host${KUBELET}`);
  assert.equal(mapConfiguredCgroup(`/host${KUBELET}`, CONTAINER, "/host/"), `/host${KUBELET}`);
});

Deno.test("mapConfiguredCgroup() refuses a path off cgroup2 and names the mounts", () => {
  assert.throws(
    () => mapConfiguredCgroup("/tmp/kubelet", UNIFIED),
    (e: Error) =>
      e instanceof CgroupPathError && /"\/tmp\/kubelet".*"\/sys\/fs\/cgroup"/.test(e.message),
  );
  assert.throws(() => mapConfiguredCgroup(KUBELET, []), /No cgroup2 filesystem is mounted/);
});

Deno.test("mapConfiguredCgroup() refuses a path outside a namespaced mount's subtree", () => {
  const ns = [{ mountPoint: "/sys/fs/cgroup", root: "/kubepods/pod1", fsType: "cgroup2" }];
  const tmpfs = [{ mountPoint: "/sys/fs/cgroup", root: "/", fsType: "tmpfs" }];
  const mounts = [...tmpfs, { ...ns[0], mountPoint: "/sys/fs/cgroup/unified" }];
  assert.throws(() => mapConfiguredCgroup(KUBELET, mounts), /outside what the cgroup2 mount/);
});

Deno.test("cgroup2Mounts() prefers the host's mount under the prefix", () => {
  assert.equal(cgroup2Mounts(CONTAINER, "/host")[0].mountPoint, "/host/sys/fs/cgroup");
  assert.equal(cgroup2Mounts(CONTAINER)[0].mountPoint, "/sys/fs/cgroup");
});

Deno.test("mapProcessCgroup() resolves a /proc cgroup line under the cgroup2 mount", () => {
  assert.equal(
    mapProcessCgroup("/system.slice/k3s.service", UNIFIED),
    "/sys/fs/cgroup/system.slice/k3s.service",
  );
  assert.equal(
    mapProcessCgroup("/system.slice/kubelet.service", parseMountPoints(HYBRID)),
    "/sys/fs/cgroup/unified/system.slice/kubelet.service",
  );
  assert.equal(
    mapProcessCgroup("/podruntime/kubelet", CONTAINER, "/host"),
    "/host/sys/fs/cgroup/podruntime/kubelet",
  );
  assert.equal(mapProcessCgroup("/", UNIFIED), "/sys/fs/cgroup");
});

Deno.test("mapProcessCgroup() cuts a namespaced mount's root and refuses paths outside it", () => {
  const ns = [{ mountPoint: "/sys/fs/cgroup", root: "/lace", fsType: "cgroup2" }];
  assert.equal(mapProcessCgroup("/lace/a", ns), "/sys/fs/cgroup/a");
  assert.throws(() => mapProcessCgroup("/other", ns), /not visible under the cgroup2 mount/);
  assert.throws(
    () => mapProcessCgroup("/../../system.slice/k", ns),
    /outside this process's cgroup/,
  );
});

Deno.test("mapProcessCgroup() resolves a kubelet outside a pod's cgroup namespace through the host mount", () => {
  // As seen from a DaemonSet pod with its own cgroup namespace (checked with unshare --cgroup).
  const pod = [
    { mountPoint: "/sys/fs/cgroup", root: "/", fsType: "cgroup2" },
    { mountPoint: "/host/sys/fs/cgroup", root: "/../../..", fsType: "cgroup2" },
  ];
  assert.equal(
    mapProcessCgroup("/../../../system.slice/kubelet.service", pod),
    "/host/sys/fs/cgroup/system.slice/kubelet.service",
  );
  assert.equal(mapProcessCgroup("/../../..", pod), "/host/sys/fs/cgroup");
  // Deeper than the host mount's root reaches: refused, never guessed.
  assert.throws(
    () => mapProcessCgroup("/../../../../x", [pod[1]]),
    /outside this process's cgroup namespace and no cgroup2 mount reaches it/,
  );
});
