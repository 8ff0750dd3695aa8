import type { Database } from "@gw/db";
import { createLogger } from "@gw/log";
import { Code, ConnectError, errorInfo } from "@gw/rpc";
import { describe, expect, it } from "vitest";
import { WebhooksHandlers } from "./service.ts";
import {
  assertPublicLiteral,
  checkEndpointUrl,
  isPublicAddress,
  publicOnlyLookup,
  TargetRejected,
} from "./targets.ts";

const PRIVATE_URLS = [
  "http://127.0.0.1/hooks",
  "http://127.8.9.10:8080/hooks",
  "http://10.1.2.3/hooks",
  "http://172.16.0.5/hooks",
  "http://192.168.1.1/hooks",
  "http://169.254.169.254/latest/meta-data",
  "http://100.64.0.1/hooks",
  "http://0.0.0.0/hooks",
  "http://[::1]/hooks",
  "http://[fe80::1]/hooks",
  "http://[fd00::1]/hooks",
  "http://[::ffff:127.0.0.1]/hooks",
  "http://localhost:8080/hooks",
];

describe("endpoint targets", () => {
  it.each(PRIVATE_URLS)("refuses %s when private targets are not allowed", async (url) => {
    await expect(checkEndpointUrl(url, false)).rejects.toBeInstanceOf(TargetRejected);
  });

  it("accepts a public address without sending anything to it", async () => {
    await expect(checkEndpointUrl("https://93.184.216.34/hooks?shop=1", false)).resolves.toBeInstanceOf(URL);
  });

  it("accepts loopback targets when private targets are allowed, as in local runs", async () => {
    await expect(checkEndpointUrl("http://127.0.0.1:9/hooks", true)).resolves.toBeInstanceOf(URL);
  });

  it.each(["ftp://example.com/hooks", "file:///etc/passwd", "not a url", "https://example.com/#frag"])(
    "refuses %s whatever the flag",
    async (url) => {
      await expect(checkEndpointUrl(url, true)).rejects.toBeInstanceOf(TargetRejected);
    },
  );

  it("judges an IPv4-mapped IPv6 address as the IPv4 address it carries", () => {
    expect(isPublicAddress("::ffff:10.0.0.1")).toBe(false);
    expect(isPublicAddress("::ffff:93.184.216.34")).toBe(true);
  });

  it("refuses at send time a stored literal address that is not public", () => {
    expect(() => assertPublicLiteral(new URL("http://[::1]:8080/"))).toThrow(TargetRejected);
    expect(() => assertPublicLiteral(new URL("http://93.184.216.34/"))).not.toThrow();
  });

  it("resolves a name that points only at loopback to no address at connect time", async () => {
    const err = await new Promise<unknown>((resolve) =>
      publicOnlyLookup("localhost", { all: true }, (e) => resolve(e)),
    );
    expect((err as { code?: string } | null)?.code).toBe("EADDRNOTPUBLIC");
  });

  it("answers PutEndpoint for a private target with INVALID_ARGUMENT on the url field", async () => {
    const handlers = new WebhooksHandlers({
      // Validation fails before any query, so no database is needed here.
      db: {} as Database,
      logger: createLogger("webhooks-test", "silent"),
      allowPrivateTargets: false,
      retrySteps: 3,
      secretGraceMs: 0,
    });
    const err = await handlers
      .putEndpoint({ shopId: "0b0f3c7e-5d4a-4c55-9d7a-2f6f2d8a1c01", url: "http://169.254.169.254/" })
      .catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.InvalidArgument);
    expect(errorInfo(err)).toMatchObject({ code: "validation_failed", field: "url" });
  });
});
