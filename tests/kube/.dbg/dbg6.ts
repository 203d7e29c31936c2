import { startControlPlane } from "../fixture.ts";
const t0 = Date.now();
await using cp = await startControlPlane({ keepDir: true });
console.log("ready in", Date.now() - t0, "ms", cp.dir);
await cp.restartApiServer();
console.log("restarted in", Date.now() - t0, "ms");
