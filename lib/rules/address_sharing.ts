/**
 * What `--address-sharing` decides, in one place: the ADD's checks, the desired state, the
 * problems reported, the metrics and the agent's start each ask the policy here instead of
 * comparing the mode, so what a mode means is written once.
 */

/**
 * Whether pods of two networks may hold one address on this node.
 * `exclusive` (default): one network per address; a later pod of another
 * network is refused at CNI ADD, or, where the clash is learnt only later,
 * none of its probes at that address is tagged. `shared`: allowed, for
 * networks that trust each other (per-key conflicts only).
 */
export type AddressSharing = "exclusive" | "shared";
export const ADDRESS_SHARING: readonly AddressSharing[] = ["exclusive", "shared"];

/** The questions the agent's parts ask of the address-sharing mode. */
export interface AddressSharingPolicy {
  /**
   * A CNI ADD is refused at an address a pod of another network holds, and its pod's network is
   * looked up (the cache, else the API) to tell.
   */
  readonly refusesClashAtAdd: boolean;
  /**
   * A later pod of another network at an address gets no target there (the holder neither when
   * one of them is on the default network): the clash the ADD could not see is closed here.
   */
  readonly untagsLaterPods: boolean;
  /**
   * An address pods of several networks hold is a problem (logged, an Event, counted in
   * lace_address_clashes), not the operator's choice (counted in lace_shared_addresses).
   */
  readonly clashIsProblem: boolean;
  /** Said once when the agent starts under this mode, or nothing. */
  readonly startWarning?: string;
}

const POLICIES: Readonly<Record<AddressSharing, AddressSharingPolicy>> = {
  exclusive: { refusesClashAtAdd: true, untagsLaterPods: true, clashIsProblem: true },
  shared: {
    refusesClashAtAdd: false,
    untagsLaterPods: false,
    clashIsProblem: false,
    startWarning:
      "Address sharing is on (--address-sharing=shared): pods of different networks may hold one address on this node, and a pod at such an address can answer the kubelet's probe with a redirect to another network's pod there, which the kubelet follows into that network with policy skipped; use it only for networks that trust each other (lace_shared_addresses counts them)",
  },
};

/** The policy of `mode` (a validated Config's addressSharing). */
export function addressSharingPolicy(mode: AddressSharing): AddressSharingPolicy {
  return POLICIES[mode];
}
