import { ManagedProcess } from "../_process.ts";
await Deno.writeTextFile("/tmp/mp.log", "start\n");
const p = await ManagedProcess.spawn(
  "/root/.cache/lace/tools/kube-apiserver-v1.37.2/kube-apiserver",
  ["--etcd-servers=http://127.0.0.1:1", "--v=2"],
  "/tmp/mp.log",
);
await p.status;
await p.stop();
console.log(JSON.stringify(await Deno.readTextFile("/tmp/mp.log")));
