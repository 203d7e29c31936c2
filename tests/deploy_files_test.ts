/**
 * The deployment files beside the chart: the example CNI conflist and the systemd unit.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { isExecutable } from "./helpers/executable.ts";
import { REPO } from "./helpers/helm.ts";
import { skipIf, skipName } from "./helpers/skip.ts";

Deno.test("the example conflist chains the lace plugin after the network plugin", async () => {
  const conflist = JSON.parse(await Deno.readTextFile(join(REPO, "deploy/cni/10-lace.conflist")));
  assert.equal(conflist.cniVersion, "1.0.0");
  assert.ok(conflist.plugins.length >= 2);
  const last = conflist.plugins.at(-1);
  assert.equal(last.type, "lace");
  assert.equal(last.socket, "/run/lace/cni.sock");
  assert.equal(last.timeout, "1s");
  assert.equal(last.network, conflist.plugins[0].network);
  assert.equal(last.networkId, conflist.plugins[0].networkId);
});

const systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].find(isExecutable);

const noSystemdAnalyze = systemdAnalyze ? undefined : "systemd-analyze not installed (systemd)";

Deno.test({
  name: skipName("the systemd unit passes systemd-analyze verify", noSystemdAnalyze),
  ignore: skipIf(noSystemdAnalyze),
  async fn() {
    // verify also checks that ExecStart exists; the binary is not installed on a build machine,
    // so the copy points at an executable that is.
    const unit = await Deno.readTextFile(join(REPO, "deploy/systemd/lace-agent.service"));
    assert.match(unit, /^ExecStart=\/usr\/local\/bin\/lace agent$/m);
    const dir = await Deno.makeTempDir({ prefix: "lace-unit-" });
    try {
      const path = join(dir, "lace-agent.service");
      await Deno.writeTextFile(
        path,
        unit.replace(/^ExecStart=\/usr\/local\/bin\/lace /m, `ExecStart=${Deno.execPath()} `),
      );
      const out = await new Deno.Command(systemdAnalyze!, {
        args: ["verify", path],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, text);
      assert.doesNotMatch(text, /lace-agent\.service/, text);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
