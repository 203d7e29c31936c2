import assert from "node:assert/strict";
import {
  type AttachQuery,
  BPF_F_ALLOW_MULTI,
  BPF_F_ALLOW_OVERRIDE,
  type CgroupAttachments,
  describeExclusiveHolder,
  findExclusiveHolder,
} from "./exclusive.ts";

const ROOT = "/sys/fs/cgroup";
const TARGET = "/sys/fs/cgroup/system.slice/kubelet.service";

/** A query over a table of "dir type" → attachments; everything else is empty. */
function table(entries: Record<string, CgroupAttachments>): AttachQuery {
  return (dir, type) => entries[`${dir} ${type}`] ?? { flags: 0, progIds: [] };
}

Deno.test("findExclusiveHolder() finds nothing on a clean hierarchy", () => {
  assert.equal(findExclusiveHolder(TARGET, ROOT, table({})), null);
});

Deno.test("findExclusiveHolder() names an ancestor with an exclusive program", () => {
  const holder = findExclusiveHolder(
    TARGET,
    ROOT,
    table({ "/sys/fs/cgroup/system.slice connect6": { flags: 0, progIds: [42] } }),
  );
  assert.deepEqual(holder, {
    cgroup: "/sys/fs/cgroup/system.slice",
    attachType: "connect6",
    flags: 0,
    progIds: [42],
  });
});

Deno.test("findExclusiveHolder() names the root cgroup when it holds the exclusive program", () => {
  const holder = findExclusiveHolder(
    TARGET,
    ROOT,
    table({ "/sys/fs/cgroup connect4": { flags: 0, progIds: [7] } }),
  );
  assert.equal(holder?.cgroup, ROOT);
});

Deno.test("findExclusiveHolder() stops at a multi or override ancestor like the kernel", () => {
  const multiBelow = table({
    "/sys/fs/cgroup/system.slice connect4": { flags: BPF_F_ALLOW_MULTI, progIds: [1] },
    "/sys/fs/cgroup connect4": { flags: 0, progIds: [2] },
  });
  assert.equal(findExclusiveHolder(TARGET, ROOT, multiBelow), null);
  const override = table({
    "/sys/fs/cgroup/system.slice connect4": { flags: BPF_F_ALLOW_OVERRIDE, progIds: [3] },
  });
  assert.equal(findExclusiveHolder(TARGET, ROOT, override), null);
});

Deno.test("findExclusiveHolder() names the cgroup itself when it holds a non-multi program", () => {
  const holder = findExclusiveHolder(
    TARGET,
    ROOT,
    table({ [`${TARGET} connect4`]: { flags: BPF_F_ALLOW_OVERRIDE, progIds: [9] } }),
  );
  assert.equal(holder?.cgroup, TARGET);
});

Deno.test("describeExclusiveHolder() says EPERM, the holding cgroup and the program", () => {
  const text = describeExclusiveHolder(TARGET, {
    cgroup: "/sys/fs/cgroup/system.slice",
    attachType: "connect4",
    flags: 0,
    progIds: [42],
  });
  assert.match(text, /EPERM/);
  assert.match(text, /ancestor "\/sys\/fs\/cgroup\/system\.slice"/);
  assert.match(text, /exclusive \(non-multi\) connect4 program \(id 42\)/);
});
