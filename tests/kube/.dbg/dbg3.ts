import { CoreV1Api } from "@kubernetes/client-node";
import { startControlPlane } from "../fixture.ts";
const cp = await startControlPlane({
  apiServerFlags: Deno.args.includes("h1") ? ["--disable-http2-serving"] : [],
});
const core = cp.adminConfig().makeApiClient(CoreV1Api);
await core.listNamespace();
console.log("listed");
await cp.close();
console.log("closed");
if (Deno.args[0] === "exit") Deno.exit(0);
