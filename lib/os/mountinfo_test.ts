import assert from "node:assert/strict";
import { bpffsMountPoints, cgroup2MountPoints, mountOf, parseMountInfo } from "./mountinfo.ts";

const HYBRID = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 30 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
43 30 0:40 / /sys/fs/bpf rw,relatime - bpf bpf rw
50 22 0:41 / /mnt/with\\040space rw shared:20 master:3 - tmpfs none rw
`;

Deno.test("parseMountInfo() reads every field, optional fields included", () => {
  const mounts = parseMountInfo(HYBRID);
  assert.equal(mounts.length, 7);
  assert.deepEqual(mounts[3], {
    id: 41,
    parentId: 31,
    root: "/",
    mountPoint: "/sys/fs/cgroup/unified",
    options: ["rw", "relatime"],
    fsType: "cgroup2",
    source: "cgroup2",
  });
  assert.equal(mounts[6].fsType, "tmpfs");
  assert.equal(mounts[6].source, "none");
});

Deno.test("parseMountInfo() undoes octal escapes in paths", () => {
  assert.equal(parseMountInfo(HYBRID)[6].mountPoint, "/mnt/with space");
});

Deno.test("parseMountInfo() skips malformed lines", () => {
  assert.deepEqual(parseMountInfo("garbage\n\n1 2 3\nx y 0:1 / /a rw - tmpfs t rw\n"), []);
});

Deno.test("cgroup2MountPoints() finds the unified hierarchy of a hybrid host", () => {
  assert.deepEqual(cgroup2MountPoints(parseMountInfo(HYBRID)), ["/sys/fs/cgroup/unified"]);
});

Deno.test("cgroup2MountPoints() finds /sys/fs/cgroup on a unified host", () => {
  const text = "25 22 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
  assert.deepEqual(cgroup2MountPoints(parseMountInfo(text)), ["/sys/fs/cgroup"]);
});

Deno.test("bpffsMountPoints() is empty when bpffs is not mounted", () => {
  const mounts = parseMountInfo(HYBRID).filter((m) => m.fsType !== "bpf");
  assert.deepEqual(bpffsMountPoints(mounts), []);
  assert.deepEqual(bpffsMountPoints(parseMountInfo(HYBRID)), ["/sys/fs/bpf"]);
});

Deno.test("mountOf() picks the longest mount point holding the path", () => {
  const mounts = parseMountInfo(HYBRID);
  assert.equal(mountOf(mounts, "/sys/fs/bpf/lace/probe_targets")?.fsType, "bpf");
  assert.equal(mountOf(mounts, "/sys/fs/bpf")?.fsType, "bpf");
  assert.equal(mountOf(mounts, "/sys/fs/bpfx")?.fsType, "sysfs");
  assert.equal(mountOf(mounts, "/sys/fs/cgroup/unified/kubelet")?.fsType, "cgroup2");
  assert.equal(mountOf(mounts, "/sys/fs/cgroup/pids")?.fsType, "tmpfs");
  assert.equal(mountOf(mounts, "/tmp/x")?.fsType, "ext4");
});

Deno.test("mountOf() lets a later mount hide an earlier one at the same point", () => {
  const text = HYBRID + "60 43 0:50 / /sys/fs/bpf rw - tmpfs tmpfs rw\n";
  assert.equal(mountOf(parseMountInfo(text), "/sys/fs/bpf/lace")?.fsType, "tmpfs");
});
