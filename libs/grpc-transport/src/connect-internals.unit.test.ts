import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { AnySchema, anyPack, StringValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { findTrailerError, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { describe, expect, it } from "vitest";

// The lean path still uses two functions of @connectrpc/connect/protocol-grpc, which
// connect marks "@private Internal code, does not follow semantic versioning":
// setTrailerStatus (server: a ConnectError as grpc-status, grpc-message and
// grpc-status-details-bin) and findTrailerError (client: the reverse). They are kept
// because they are exactly what connect-node's own gRPC path does, so both paths agree
// on every error byte for byte. The package pins connect's exact version (no caret),
// and these tests fail if an upgrade changes what the two functions do.

const require = createRequire(import.meta.url);

/** google.rpc.Status { code = 1; message = 2; repeated Any details = 3 }, written by hand. */
function statusBytes(code: number, message: string, details: Uint8Array[]): Uint8Array {
  const w = new BinaryWriter();
  w.tag(1, WireType.Varint).int32(code);
  w.tag(2, WireType.LengthDelimited).string(message);
  for (const d of details) w.tag(3, WireType.LengthDelimited).bytes(d);
  return w.finish();
}

const base64 = (b: Uint8Array) => Buffer.from(b).toString("base64").replace(/=+$/, "");

describe("the pinned @connectrpc/connect", () => {
  it("is the exact version the package asks for", () => {
    const ours = require("../package.json") as { dependencies: Record<string, string> };
    // The copy this package resolves (its own node_modules link), not whichever is hoisted.
    const installed = JSON.parse(
      readFileSync(new URL("../node_modules/@connectrpc/connect/package.json", import.meta.url), "utf8"),
    ) as { version: string };
    expect(ours.dependencies["@connectrpc/connect"]).toMatch(/^\d+\.\d+\.\d+$/);
    expect(installed.version).toBe(ours.dependencies["@connectrpc/connect"]);
  });
});

describe("setTrailerStatus", () => {
  it("sets grpc-status 0 and nothing else for success", () => {
    const h = setTrailerStatus(new Headers(), undefined);
    expect([...h]).toEqual([["grpc-status", "0"]]);
  });

  it("writes code, percent-encoded message, details as google.rpc.Status and the error's metadata", () => {
    const detail = create(StringValueSchema, { value: "why" });
    const err = new ConnectError("nöt fóund: 100% /a?b=c", Code.NotFound, { "x-extra": "kept" }, [
      { desc: StringValueSchema, value: detail },
    ]);
    const h = setTrailerStatus(new Headers(), err);
    const any = toBinary(AnySchema, anyPack(StringValueSchema, detail));
    expect(Object.fromEntries(h)).toEqual({
      "grpc-status": "5",
      "grpc-message": encodeURIComponent("nöt fóund: 100% /a?b=c"),
      "grpc-status-details-bin": base64(statusBytes(5, "nöt fóund: 100% /a?b=c", [any])),
      "x-extra": "kept",
    });
  });

  it("sets no details header for an error without details", () => {
    const h = setTrailerStatus(new Headers(), new ConnectError("plain", Code.Aborted));
    expect(Object.fromEntries(h)).toEqual({ "grpc-status": "10", "grpc-message": "plain" });
  });
});

describe("findTrailerError", () => {
  it("prefers grpc-status-details-bin, keeping the details' type and bytes", () => {
    const detail = toBinary(StringValueSchema, create(StringValueSchema, { value: "why" }));
    const any = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string("type.googleapis.com/google.protobuf.StringValue")
      .tag(2, WireType.LengthDelimited)
      .bytes(detail)
      .finish();
    const h = new Headers({
      "grpc-status": "9",
      "grpc-message": "ignored",
      "grpc-status-details-bin": base64(statusBytes(9, "from the details", [any])),
    });
    const err = findTrailerError(h);
    expect(err).toBeInstanceOf(ConnectError);
    expect(err?.code).toBe(Code.FailedPrecondition);
    expect(err?.rawMessage).toBe("from the details");
    expect(err?.details).toEqual([{ type: "google.protobuf.StringValue", value: detail }]);
    expect(err?.metadata.get("grpc-status")).toBe("9");
  });

  it("reads grpc-status and a percent-decoded grpc-message without details", () => {
    const err = findTrailerError(new Headers({ "grpc-status": "3", "grpc-message": "caf%C3%A9%20100%25" }));
    expect([err?.code, err?.rawMessage]).toEqual([Code.InvalidArgument, "café 100%"]);
  });

  it("answers undefined for OK or no status, INTERNAL for a code out of range", () => {
    expect(findTrailerError(new Headers({ "grpc-status": "0" }))).toBeUndefined();
    expect(findTrailerError(new Headers())).toBeUndefined();
    const err = findTrailerError(new Headers({ "grpc-status": "17" }));
    expect([err?.code, err?.rawMessage]).toEqual([Code.Internal, "invalid grpc-status: 17"]);
  });
});
