import { startControlPlane } from "/work/main/tests/kube/fixture.ts";
const t0 = Date.now();
const cp = await startControlPlane();
console.log("started in", Date.now() - t0, cp.url);
console.error("closing");
await cp.close();
console.error("closed");
