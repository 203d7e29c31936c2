import { CoreV1Api } from "@kubernetes/client-node";
import { startControlPlane } from "../fixture.ts";
const cp = await startControlPlane();
const core = cp.adminConfig({ http2: Deno.args.includes("h2") }).makeApiClient(CoreV1Api);
await core.listNamespace();
await core.listNamespace();
await cp.stopApiServer();
await cp.close();
console.log("closed");
