/**
 * The chart's /run/lace is a hostPath the kubelet creates 0755 (its
 * DirectoryOrCreate), so the agent makes its socket directory root's alone before it listens.
 */
import assert from "node:assert/strict";
import { listenUnixSocket } from "./unix.ts";
import { needsRoot, skipIf } from "../../tests/helpers/skip.ts";

async function withRunDir(mode: number, fn: (dir: string) => Promise<void>): Promise<void> {
  const tmp = await Deno.makeTempDir({ prefix: "lace-unix-socket-" });
  const dir = `${tmp}/run-lace`;
  try {
    await Deno.mkdir(dir);
    await Deno.chmod(dir, mode);
    await fn(dir);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
}

const modeOf = (path: string) => Deno.lstatSync(path).mode! & 0o7777;

Deno.test("listenUnixSocket() tightens the kubelet's 0755 socket directory to 0700", async () => {
  await withRunDir(0o755, async (dir) => {
    const socket = await listenUnixSocket(`${dir}/cni.sock`, "--cni-socket");
    try {
      assert.equal(modeOf(dir), 0o700);
      assert.equal(modeOf(`${dir}/cni.sock`), 0o600);
    } finally {
      socket.listener.close();
      socket.remove();
    }
  });
});

Deno.test(
  "listenUnixSocket() refuses a socket directory others may write, and binds nothing there",
  async () => {
    await withRunDir(0o777, async (dir) => {
      await assert.rejects(
        () => listenUnixSocket(`${dir}/cni.sock`, "--cni-socket"),
        /Directory of --cni-socket ".*run-lace" is writable by group or others \(mode 0777\)/,
      );
      assert.deepEqual([...Deno.readDirSync(dir)], []);
      assert.equal(modeOf(dir), 0o777, "left for the operator to look at");
    });
  },
);

Deno.test({
  name: "listenUnixSocket() refuses a socket directory another user owns",
  ignore: skipIf(needsRoot("files of other users")),
  async fn() {
    await withRunDir(0o700, async (dir) => {
      await Deno.chown(dir, 65534, 65534);
      await assert.rejects(
        () => listenUnixSocket(`${dir}/agent.sock`, "--agent-socket"),
        /owned by uid 65534, not root/,
      );
      assert.deepEqual([...Deno.readDirSync(dir)], []);
    });
  },
});
