/**
 * The doctor's checks of the datapath: bpffs, the pinned maps and links, and whether the
 * node runs this lace's BPF object.
 */
import { ABI_VERSION } from "../datapath/probe_map.ts";
import { type Check, check, isError, type NodeSnapshot, START_AGENT } from "./check.ts";

/** bpffs, the pinned map, its layouts, the links and the program version, in reading order. */
export function datapathChecks(s: NodeSnapshot): Check[] {
  const checks: Check[] = [];
  const onBpffs = s.pinPathFsType === "bpf";
  checks.push(check(
    "bpffs",
    onBpffs,
    onBpffs
      ? `bpffs is mounted and holds the pin path "${s.pinPath}"`
      : s.bpffsMounts.length === 0
      ? "bpffs is not mounted"
      : `pin path "${s.pinPath}" is not on bpffs (bpffs is at ${s.bpffsMounts.join(", ")})`,
    s.bpffsMounts.length === 0
      ? "mount it: `mount -t bpf -o mode=0700 bpf /sys/fs/bpf` (in a container, mount the host's /sys/fs/bpf)"
      : "use a --pin-path under a bpffs mount",
  ));
  checks.push(...permissionChecks(s));
  checks.push(check(
    "pinned-map",
    s.mapPinned,
    s.mapPinned
      ? `probe map pinned under "${s.pinPath}"`
      : `no probe map pinned under "${s.pinPath}"`,
    START_AGENT,
  ));
  if (s.layouts.length > 1) {
    checks.push(check(
      "map-layouts",
      false,
      `maps of ${s.layouts.length} layouts are pinned (ABI ${s.layouts.join(", ")}): a migration ` +
        "is under way, was interrupted, or an agent of another release stands by",
      "the agent finishes the migration at its next start or cgroup check (within a second); " +
        "if this stays, check that one release of the agent runs on this node",
      "warning",
    ));
  }
  checks.push(...linkChecks(s));
  checks.push(versionCheck(s));
  return checks;
}

/**
 * Who besides root may write where Lace pins: a bpffs any local user may write to (mounted
 * without a mode it is 1777), and pin directories someone else owns or may write.
 */
function permissionChecks(s: NodeSnapshot): Check[] {
  const checks: Check[] = [];
  const open = s.bpffsModes.filter((m) => m.mode !== null && (m.mode & 0o002) !== 0);
  if (open.length) {
    checks.push(check(
      "bpffs-mode",
      false,
      `bpffs at ${
        open.map((m) => `"${m.mountPoint}" (mode 0${m.mode!.toString(8)})`).join(", ")
      } is writable by every local user: anyone may create directories there, such as a pin ` +
        "path before an agent does, and hold locks on what they create",
      "make it root's alone: `chmod 0700 /sys/fs/bpf` now, and mount it with `-o mode=0700` at " +
        "boot (systemd's sys-fs-bpf.mount and the chart's node.mountBpffs do); Lace's own pin " +
        "directory is 0700 whatever the mount's mode",
      "warning",
    ));
  }
  const refused = s.pinDirProblems.filter((p) => !p.tightenable);
  const loose = s.pinDirProblems.filter((p) => p.tightenable);
  if (refused.length) {
    checks.push(check(
      "pin-dirs",
      false,
      refused.map((p) => p.problem).join("; "),
      "the agent refuses to start on it until fixed as said",
    ));
  } else if (loose.length) {
    checks.push(check(
      "pin-dirs",
      false,
      loose.map((p) => p.problem).join("; "),
      "the agent makes it 0700 at its next start (an older release made it readable by all)",
      "warning",
    ));
  }
  if (s.pinDirOpeners.length) {
    const pids = [...new Set(s.pinDirOpeners.map((o) => o.pid))];
    checks.push(check(
      "pin-dir-openers",
      false,
      "processes of users other than root have Lace's pin directories open and may hold its " +
        `locks (start, attach or a rollback then waits on them): ${
          s.pinDirOpeners.map((o) =>
            `pid ${o.pid} (uid ${o.uid}${o.comm ? `, ${o.comm}` : ""}) on "${o.dir}"`
          ).join(", ")
        }`,
      `stop them (\`kill ${pids.join(" ")}\`); no one but root can open these directories ` +
        "again once they are 0700",
    ));
  }
  return checks;
}

function linkChecks(s: NodeSnapshot): Check[] {
  if (isError(s.links)) {
    return [
      check("links", false, `cannot read Lace's pinned links: ${s.links.error}`, START_AGENT),
    ];
  }
  const out: Check[] = [];
  const kubeletId = s.kubeletCgroup.id;
  for (const l of s.links) {
    const name = `link-${l.program}`;
    if (!l.pinned) {
      out.push(check(name, false, `no ${l.program} link pinned under "${s.pinPath}"`, START_AGENT));
    } else if (!l.alive) {
      out.push(check(
        name,
        false,
        `the ${l.program} link is dead: the cgroup it was attached to is gone ` +
          "(the kubelet restarted and its cgroup was recreated)",
        "a running agent re-attaches within a second: check that it runs (agent-health below)",
      ));
    } else if (l.cgroupId !== kubeletId) {
      const where = s.cgroupPathOf(l.cgroupId);
      const at = `the ${l.program} link is attached to cgroup id ${l.cgroupId}${
        where ? ` ("${where}")` : ""
      }`;
      out.push(check(
        name,
        false,
        kubeletId === null
          ? `${at}, and the kubelet cgroup was not found`
          : `${at}, not to the kubelet cgroup "${s.kubeletCgroup.path}" (id ${kubeletId})`,
        kubeletId === null
          ? "fix the kubelet cgroup first (see kubelet-cgroup below)"
          : "restart the agent with the right --kubelet-cgroup; it moves the link",
      ));
    } else {
      out.push(check(
        name,
        true,
        `the ${l.program} link (program id ${l.progId}) is attached to the kubelet cgroup ` +
          `(id ${l.cgroupId})`,
      ));
    }
  }
  return out;
}

/** Which BPF object the node runs (the info map of the maps the links use), and whether it is this lace's. */
function versionCheck(s: NodeSnapshot): Check {
  const fix = "start the agent of this release: it swaps its program into the pinned links in " +
    "place (a map layout change is migrated first)";
  if (isError(s.info)) return check("program-version", false, s.info.error, START_AGENT);
  if (s.info === null) {
    return check("program-version", false, "no program version recorded in the info map", fix);
  }
  const runs = `the node runs BPF object sha256 ${s.info.objectSha256.slice(0, 12)} ` +
    `(map layout ABI ${s.info.abiVersion})`;
  if (isError(s.binarySha256)) {
    return check(
      "program-version",
      false,
      `${runs}; this lace's object: ${s.binarySha256.error}`,
      "rebuild: `deno task bpf`",
    );
  }
  const abi = s.binaryAbi ?? ABI_VERSION;
  const same = s.info.objectSha256 === s.binarySha256 && s.info.abiVersion === abi;
  return check(
    "program-version",
    same,
    same
      ? `${runs}: this lace's object`
      : `${runs}, not this lace's (sha256 ${s.binarySha256.slice(0, 12)}, map layout ABI ${abi})`,
    fix,
  );
}
