import { startControlPlane } from "../fixture.ts";
await using cp = await startControlPlane({ keepDir: true });
console.log("size while running", (await Deno.stat(cp.dir + "/kube-apiserver.log")).size);
await cp.stopApiServer();
console.log("size after stop", (await Deno.stat(cp.dir + "/kube-apiserver.log")).size);
