import assert from "node:assert/strict";
import {
  checkPodsDir,
  judgeManifestFile,
  judgePodsDir,
  onReadOnlyMount,
  podsDirProblem,
} from "./dir_trust.ts";
import { parseMountInfo } from "../os/mountinfo.ts";

const ROOT = 0;

Deno.test("judgePodsDir() takes a root directory writable by no one else, or any on a read-only mount", () => {
  assert.equal(judgePodsDir({ uid: 0, mode: 0o40755 }, ROOT, false), undefined);
  assert.match(judgePodsDir({ uid: 0, mode: 0o1777 }, ROOT, false)!, /mode 01777/);
  assert.match(judgePodsDir({ uid: 0, mode: 0o775 }, ROOT, false)!, /group or others/);
  assert.match(judgePodsDir({ uid: 1000, mode: 0o700 }, ROOT, false)!, /owned by uid 1000/);
  // A ConfigMap volume: a 0777 tmpfs the kubelet mounts read-only.
  assert.equal(judgePodsDir({ uid: 0, mode: 0o777 }, ROOT, true), undefined);
});

Deno.test("judgeManifestFile() skips another non-root user's file on any mount, and one others may write outside a read-only mount", () => {
  assert.equal(judgeManifestFile({ uid: 0, mode: 0o644 }, ROOT, false), undefined);
  assert.match(judgeManifestFile({ uid: 1000, mode: 0o644 }, ROOT, false)!, /uid 1000/);
  assert.match(judgeManifestFile({ uid: 1000, mode: 0o644 }, ROOT, true)!, /uid 1000/);
  assert.match(judgeManifestFile({ uid: 0, mode: 0o666 }, ROOT, false)!, /mode 0666/);
  assert.equal(judgeManifestFile({ uid: 0, mode: 0o777 }, ROOT, true), undefined);
});

Deno.test("onReadOnlyMount() reads the per-mount ro option of the mount holding the path", () => {
  const mounts = parseMountInfo([
    "1 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
    "2 1 0:50 / /etc/lace/pods ro,relatime - tmpfs tmpfs rw,size=1024k",
    "3 1 0:51 / /srv rw,relatime - tmpfs tmpfs ro",
  ].join("\n"));
  assert.equal(onReadOnlyMount(mounts, "/etc/lace/pods/..data"), true);
  assert.equal(onReadOnlyMount(mounts, "/etc/lace"), false);
  // The superblock's options (after the dash) do not make the mount read-only.
  assert.equal(onReadOnlyMount(mounts, "/srv/pods"), false);
});

Deno.test("checkPodsDir() refuses a root directory whose parent others may write without the sticky bit, naming it", () => {
  const parent = Deno.makeTempDirSync({ prefix: "lace-pods-parent-" });
  try {
    Deno.mkdirSync(`${parent}/pods`, { mode: 0o755 });
    Deno.chmodSync(parent, 0o777);
    const rw = parseMountInfo("1 0 8:1 / / rw - ext4 /dev/sda1 rw");
    assert.throws(
      () => checkPodsDir(`${parent}/pods`, Deno.uid() ?? 0, rw),
      new RegExp(`parent "${parent}" is writable by group or others without the sticky bit`),
    );
    Deno.chmodSync(parent, 0o755);
    assert.equal(podsDirProblem(`${parent}/pods`, Deno.uid() ?? 0, rw), undefined);
  } finally {
    Deno.removeSync(parent, { recursive: true });
  }
});
