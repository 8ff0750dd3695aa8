import { promises as dns, lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * True when the address is a public unicast address. Private, loopback, link-local
 * (cloud metadata at 169.254.169.254), carrier-grade NAT, unique-local, multicast,
 * unspecified and reserved ranges are all refused, and an IPv4-mapped IPv6 address is
 * judged as the IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === "unicast";
}

/** Why an endpoint URL was refused, for the merchant's error message. */
export class TargetRejected extends Error {
  override name = "TargetRejected";
}

/** The host of a URL without IPv6 brackets, as DNS and `net` want it. */
const bareHost = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

/**
 * Checks a merchant's endpoint URL: http or https, a host, no fragment. Unless private
 * targets are allowed, its host must be a public address or a name that resolves only
 * to public addresses. Delivery checks the resolved address again at connect time
 * (`publicOnlyLookup`), because a name can be re-pointed after this check.
 */
export async function checkEndpointUrl(raw: string, allowPrivate: boolean): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRejected("url must be an absolute http or https URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TargetRejected("url must use http or https");
  }
  if (raw.length > 2048) throw new TargetRejected("url must be at most 2048 characters");
  if (url.hash) throw new TargetRejected("url must not contain a fragment");
  const host = bareHost(url);
  if (!host) throw new TargetRejected("url must name a host");
  if (allowPrivate) return url;
  if (isIP(host)) {
    if (!isPublicAddress(host))
      throw new TargetRejected("url must not point to a private, loopback or link-local address");
    return url;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await dns.lookup(host, { all: true, verbatim: true });
  } catch {
    throw new TargetRejected("url host does not resolve");
  }
  if (addresses.length === 0 || addresses.some((a) => !isPublicAddress(a.address))) {
    throw new TargetRejected("url must not point to a private, loopback or link-local address");
  }
  return url;
}

/**
 * A `lookup` for sockets that resolves names as usual but hands out only public
 * addresses, so a name re-pointed at an internal address after PutEndpoint (DNS
 * rebinding) still cannot reach one. Fails when no public address is left.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) {
      callback(err, "", 0);
      return;
    }
    const allowed = (addresses as LookupAddress[]).filter((a) => isPublicAddress(a.address));
    if (allowed.length === 0) {
      const refused = Object.assign(new Error(`${hostname} resolves to no public address`), {
        code: "EADDRNOTPUBLIC",
      });
      callback(refused, "", 0);
      return;
    }
    if (options.all) {
      (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
    } else {
      const first = allowed[0]!;
      callback(null, first.address, first.family);
    }
  });
};

/** Refuses a literal address that is not public; names are checked by `publicOnlyLookup`. */
export function assertPublicLiteral(url: URL): void {
  const host = bareHost(url);
  if (isIP(host) && !isPublicAddress(host)) {
    throw new TargetRejected("endpoint address is not public");
  }
}
