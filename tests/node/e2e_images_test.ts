import assert from "node:assert/strict";
import { E2E_IMAGES, manifestImages } from "./e2e_images.ts";
import { skipIf, skipName } from "../helpers/skip.ts";

const manifest = `${
  Deno.env.get("GOMODCACHE") ?? `${Deno.env.get("HOME") ?? "/root"}/go/pkg/mod`
}/k8s.io/kubernetes@v1.37.2/test/utils/image/manifest.go`;
let source: string | undefined;
try {
  source = await Deno.readTextFile(manifest);
} catch {
  source = undefined;
}

const noSource = source === undefined
  ? `no ${manifest}: scripts/build_k8s_tools.sh downloads the pinned kubernetes module`
  : undefined;

Deno.test({
  name: skipName(
    "E2E_IMAGES are the names upstream's manifest.go of the pinned kubernetes gives",
    noSource,
  ),
  ignore: skipIf(noSource),
}, () => {
  // The version in the path above is tests/k8s/go.mod's (a bump there must bump both).
  const goMod = Deno.readTextFileSync(new URL("../k8s/go.mod", import.meta.url));
  assert.match(goMod, /k8s\.io\/kubernetes v1\.37\.2\b/);
  assert.deepEqual(manifestImages(source!, ["Agnhost", "BusyBox", "Pause"]), {
    Agnhost: E2E_IMAGES.agnhost,
    BusyBox: E2E_IMAGES.busybox,
    Pause: E2E_IMAGES.pause,
  });
});

Deno.test("manifestImages() reads a config line with its registry", () => {
  const text = `
    PromoterE2eRegistry:      "registry.k8s.io/e2e-test-images",
    GcRegistry:               "registry.k8s.io",
  configs[Agnhost] = Config{list.PromoterE2eRegistry, "agnhost", "2.66.1"}
  configs[Pause] = Config{list.GcRegistry, "pause", "3.10.2"}`;
  assert.deepEqual(manifestImages(text, ["Agnhost", "Pause"]), {
    Agnhost: "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
    Pause: "registry.k8s.io/pause:3.10.2",
  });
  assert.throws(() => manifestImages(text, ["Nginx"]), /no image config for Nginx/);
});
