/**
 * What cgroupfs says about a cgroup directory, shared by the follower, the
 * datapath's mount checks and the doctor: a cgroup's id is its directory's
 * inode number, the id the kernel reports for a link's cgroup.
 */

/** The inode number of a cgroup directory, which is the kernel's cgroup id; null when absent. */
export function statCgroupId(dir: string): bigint | null {
  try {
    const st = Deno.statSync(dir);
    return st.isDirectory && st.ino !== null ? BigInt(st.ino) : null;
  } catch {
    return null;
  }
}
