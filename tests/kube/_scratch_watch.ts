import { Watch } from "@kubernetes/client-node";
import { startControlPlane } from "./fixture.ts";
const cp = await startControlPlane();
try {
  const t0 = Date.now();
  const log = (m: string) => console.log(`${Date.now() - t0} ms ${m}`);
  const w = new Watch(cp.adminConfig());
  let done = false;
  await w.watch("/api/v1/pods", { fieldSelector: "spec.nodeName=x" }, (type) => log(`event ${type}`), (err) => { done = true; log(`done ${err}`); });
  log("watching; stopping api server");
  await cp.stopApiServer();
  log("stopped");
  const deadline = Date.now() + 20000;
  while (!done && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  log(`done=${done}`);
  const conns = new TextDecoder().decode((await new Deno.Command("ss", { args: ["-tnp", "state", "all", "dport", "=", new URL(cp.url).port] }).output()).stdout);
  console.log(conns);
} finally { await cp.close(); }
