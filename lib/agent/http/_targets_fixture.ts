/** `n` distinct targets, for answers that take many chunks (the HTTP surfaces' tests). */
export function manyTargets(n: number) {
  return Array.from({ length: n }, (_, i) => ({
    family: "ipv4" as const,
    address: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`,
    port: 80,
    networkId: 1,
    mark: 0x11000,
  }));
}
